package dev.criugpu.cuda;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;

/**
 * The expensive per-task driver calls (checkpoint, restore): started when criu calls the hook for a task and
 * joined once the last task has been started, so the total is close to the slowest task. With parallel work off,
 * each job runs at once on the caller's thread.
 */
final class TaskWork {
    /** One job's body; may throw. */
    interface Job {
        void run() throws Exception;
    }

    /** A job that failed, with the pid it was for. */
    record Failure(int pid, Throwable cause) {
    }

    private final boolean parallel;
    private final Map<Integer, CompletableFuture<Void>> running = new LinkedHashMap<>();
    private final List<Failure> inlineFailures = new ArrayList<>();
    private ExecutorService pool;

    TaskWork(boolean parallel) {
        this.parallel = parallel;
    }

    void submit(int pid, Job job) {
        if (!parallel) {
            try {
                job.run();
            } catch (Throwable t) {
                inlineFailures.add(new Failure(pid, t));
            }
            return;
        }
        if (pool == null) pool = Executors.newCachedThreadPool(daemonThreads());
        running.put(pid, CompletableFuture.runAsync(() -> {
            try {
                job.run();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        }, pool));
    }

    boolean idle() {
        return running.isEmpty() && inlineFailures.isEmpty();
    }

    /** Waits for every started job; returns the failures (empty when all succeeded). */
    List<Failure> joinAll() {
        List<Failure> failures = new ArrayList<>(inlineFailures);
        inlineFailures.clear();
        for (var e : running.entrySet()) {
            try {
                e.getValue().get();
            } catch (ExecutionException x) {
                Throwable cause = x.getCause();
                if (cause instanceof java.util.concurrent.CompletionException c && c.getCause() != null) cause = c.getCause();
                failures.add(new Failure(e.getKey(), cause));
            } catch (InterruptedException x) {
                Thread.currentThread().interrupt();
                failures.add(new Failure(e.getKey(), x));
            }
        }
        running.clear();
        return failures;
    }

    private static ThreadFactory daemonThreads() {
        return r -> {
            Thread t = new Thread(r, "cuda-task-work");
            t.setDaemon(true);
            return t;
        };
    }
}

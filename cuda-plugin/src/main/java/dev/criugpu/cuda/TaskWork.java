package dev.criugpu.cuda;

import dev.criugpu.api.Interrupts;
import dev.criugpu.api.Threads;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The expensive per-task driver calls (lock, checkpoint, restore): started when criu calls the hook for a task and
 * joined later, so the total is close to the slowest task. With parallel work off, jobs still run on a worker (so
 * that the hook thread can notice criu being told to stop) but one at a time, in order. Joining gives up with a
 * {@link dev.criugpu.api.CriuException} when criu receives SIGINT/SIGTERM (see {@link Interrupts}); the jobs go on.
 */
final class TaskWork {
    /** One job's body; may throw. */
    interface Job {
        void run() throws Exception;
    }

    /** A job that failed, with the pid it was for. */
    record Failure(int pid, Throwable cause) {
    }

    private final Map<Integer, CompletableFuture<Void>> running = new LinkedHashMap<>();
    private final ExecutorService pool;

    TaskWork(boolean parallel) {
        this.pool = parallel ? Executors.newCachedThreadPool(Threads.daemons("cuda-task-work"))
                : Executors.newSingleThreadExecutor(Threads.daemons("cuda-task-work"));
    }

    void submit(int pid, Job job) {
        running.put(pid, start(job));
    }

    private CompletableFuture<Void> start(Job job) {
        return CompletableFuture.runAsync(() -> {
            try {
                job.run();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new CompletionException(e);
            }
        }, pool);
    }

    private static Throwable unwrap(ExecutionException x) {
        Throwable cause = x.getCause();
        return cause instanceof CompletionException c && c.getCause() != null ? c.getCause() : cause;
    }

    boolean idle() {
        return running.isEmpty();
    }

    /**
     * Waits for every started job; returns the failures (empty when all succeeded).
     *
     * @param what what the jobs do, for the line criu logs when a stop signal cuts the wait short
     */
    List<Failure> joinAll(String what) {
        List<Failure> failures = new ArrayList<>();
        var it = running.entrySet().iterator();
        while (it.hasNext()) {
            var e = it.next();
            try {
                Interrupts.await(e.getValue(), what + " of pid " + e.getKey());
            } catch (ExecutionException x) {
                failures.add(new Failure(e.getKey(), unwrap(x)));
            }
            it.remove();
        }
        return failures;
    }

    /** Runs one job on a worker and waits for it alone (interruptibly); its failure is rethrown as is. */
    void runNow(int pid, String what, Job job) throws Exception {
        try {
            Interrupts.await(start(job), what + " of pid " + pid);
        } catch (ExecutionException x) {
            Throwable cause = unwrap(x);
            if (cause instanceof Exception e) throw e;
            throw (Error) cause;
        }
    }
}

package dev.criugpu.cuda.agent;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Threads;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.api.sys.ProcStat;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.TaskReturn;
import dev.criugpu.cuda.sys.RestoreThreads;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The agent's watch over one {@code criu dump} (DESIGN rule 12). criu tells it each task before the task's CUDA
 * state changes ({@link WatchedTask}), each task it returned itself ({@link AgentProtocol.Returned}) and the end of its
 * exit hook ({@link AgentProtocol.Done}). Once criu is gone — finished, crashed, killed — every watched task that is still the same
 * live process and was not returned goes back to its state before the dump. A driver call criu started may still be
 * running (the agent made it) and lands later, so each survivor is watched until it has stayed in its state before
 * the dump for the settle time. One line per task goes to the log next to the images.
 */
final class AgentWatch {

    private final long criuPid;
    private final long criuStart;
    private final long settleMs;
    private final long giveUpMs;
    private final PrintStream log;
    private final Map<Integer, WatchedTask> tasks = new LinkedHashMap<>();
    private final Set<Integer> returned = new LinkedHashSet<>();
    private final Map<Integer, BlockedThread> blocked = new LinkedHashMap<>();
    private boolean done;
    private boolean ended;

    AgentWatch(long criuPid, long criuStart, long settleMs, long giveUpMs, PrintStream log) {
        this.criuPid = criuPid;
        this.criuStart = criuStart;
        this.settleMs = settleMs;
        this.giveUpMs = giveUpMs;
        this.log = log;
    }

    /** One of criu's watch messages (task, returned, blocked, unblocked, done); false for any other line. */
    synchronized boolean told(AgentProtocol.ToAgent m) {
        switch (m) {
            case WatchedTask t -> tasks.put(t.pid(), t);
            case AgentProtocol.Returned r -> returned.add(r.pid());
            case BlockedThread b -> blocked.put(b.tid(), b);
            case AgentProtocol.Unblocked u -> blocked.remove(u.tid());
            case AgentProtocol.Done d -> {
                done = true;
                say("criu's exit hook is over; watching until criu is gone");
            }
            default -> {
                return false;
            }
        }
        return true;
    }

    /** criu's end of the connection closed. */
    synchronized void ended() {
        ended = true;
    }

    synchronized boolean hasEnded() {
        return ended;
    }

    boolean criuAlive() {
        return ProcStat.alive(criuPid, criuStart);
    }

    /**
     * criu has said all it will say, every task is back in criu's hands' result or gone, and no restore thread waits
     * for its signal mask (that needs criu gone): nothing to watch.
     */
    synchronized boolean nothingLeft() {
        return (done || ended) && blocked.isEmpty()
                && tasks.keySet().stream().allMatch(p -> returned.contains(p) || !tasks.get(p).alive());
    }

    synchronized String describe() {
        return tasks.isEmpty() ? "no CUDA task" : "pids " + tasks.keySet();
    }

    /** After criu is gone: returns every survivor it was told of; 0 when none was left behind. */
    int returnSurvivors(CudaBackend backend) {
        List<WatchedTask> survivors = new ArrayList<>();
        synchronized (this) {
            say("criu " + criuPid + " is gone" + (done ? " after its exit hook" : " before its exit hook ran"));
            for (WatchedTask t : tasks.values()) {
                if (returned.contains(t.pid())) {
                    say("pid " + t.pid() + ": criu returned it to " + t.initial().word() + " itself");
                } else if (!t.alive()) {
                    say("pid " + t.pid() + ": ended with the dump; nothing to return");
                } else {
                    survivors.add(t);
                }
            }
        }
        if (survivors.isEmpty()) return 0;
        if (backend == null) {
            for (WatchedTask t : survivors) {
                say("pid " + t.pid() + ": outlived criu but no CUDA backend could be opened to return it to "
                        + t.initial().word() + "; run `criu-gpu cuda --action restore|unlock --pid " + t.pid() + "` by hand");
            }
            return 1;
        }
        ExecutorService pool = Executors.newFixedThreadPool(survivors.size(), Threads.daemons("cuda-agent-return"));
        List<CompletableFuture<Boolean>> results = survivors.stream()
                .map(t -> CompletableFuture.supplyAsync(() -> returnTask(t, backend), pool)).toList();
        boolean all = results.stream().allMatch(CompletableFuture::join);
        pool.shutdown();
        return all ? 0 : 1;
    }

    /**
     * After criu is gone (and the survivors are back: the driver calls that held the threads are over): gives every
     * restore thread criu did not stop again with its own mask its mask back; 0 when none was left so.
     */
    int giveBackMasks(long timeoutMs) {
        List<BlockedThread> all;
        synchronized (this) {
            all = List.copyOf(blocked.values());
        }
        int left = 0;
        for (BlockedThread b : all) {
            WatchedTask t = tasks.get(b.pid());
            if (t != null && !t.alive()) {
                say("pid " + b.pid() + ": ended; its restore thread " + b.tid() + " needs no signal mask back");
                continue;
            }
            try {
                RestoreThreads.MaskReturn r = RestoreThreads.PTRACE.giveBackMask(b.pid(), b.tid(), b.savedMask(),
                        t == null ? -1 : t.startTime(), System.nanoTime() + timeoutMs * 1_000_000);
                say("pid " + b.pid() + ": restore thread " + b.tid() + switch (r) {
                    case GIVEN_BACK -> " has its signal mask " + Long.toHexString(b.savedMask()) + " back";
                    case CHANGED_BY_ITSELF -> " set another signal mask itself meanwhile; left as it is";
                    case DID_NOT_STOP -> " did not stop within " + timeoutMs + " ms to get its signal mask back";
                    case NOT_ITS_THREAD -> " is no longer a thread of it (the id was taken again); left alone";
                });
                if (r == RestoreThreads.MaskReturn.DID_NOT_STOP) left++;
            } catch (CriuException e) {
                say("pid " + b.pid() + ": restore thread " + b.tid() + " did not get its signal mask back: " + e.getMessage());
                left++;
            }
        }
        return left == 0 ? 0 : 1;
    }

    /**
     * Brings one survivor back (one log line when it is back), then watches it for the settle time: a driver call
     * criu started may still land and move it again, and is undone too (a second line then).
     */
    boolean returnTask(WatchedTask t, CudaBackend backend) {
        TaskReturn.Outcome o = TaskReturn.run(backend, t.pid(), t.initial(), t::alive, giveUpMs, settleMs, new TaskReturn.Listener() {
            @Override
            public void back(CudaState first, List<String> steps, long ms) {
                say("pid " + t.pid() + ": outlived criu; " + first.word() + " -> " + t.initial().word()
                        + (steps.isEmpty() ? " (nothing to do)" : " via " + steps) + " in " + ms + " ms");
            }

            @Override
            public void movedAgain(List<String> steps) {
                say("pid " + t.pid() + ": moved again by a driver call criu had started; back in " + t.initial().word() + " via " + steps);
            }
        });
        switch (o.end()) {
            case BACK -> {
            }
            case EXITED -> say("pid " + t.pid() + ": exited while being returned" + (o.steps().isEmpty() ? "" : " (did " + o.steps() + ")"));
            case IMPOSSIBLE -> say("pid " + t.pid() + ": cannot be returned to " + t.initial().word() + ": " + o.error());
            case GAVE_UP -> say("pid " + t.pid() + ": not back in " + t.initial().word() + " after " + giveUpMs / 1000 + " s"
                    + (o.error() == null ? "" : " (last error: " + o.error() + ")") + "; run `criu-gpu cuda --get-state --pid "
                    + t.pid() + "` and the matching --action by hand");
        }
        return o.back();
    }

    void say(String line) {
        synchronized (log) {
            log.println(java.time.Instant.now() + " cuda agent: " + line);
        }
    }

    static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

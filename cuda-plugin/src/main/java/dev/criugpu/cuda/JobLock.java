package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.Interrupts;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.bindings.cuda_h;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.Transitions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;

/**
 * The dump's one locker: locks the CUDA tasks of a job together; a single task is a job of one. A lock waits for the
 * GPU work its task already submitted, and the work of a rank inside a collective (NCCL) finishes only once its peers'
 * part runs too: ranks locked one after another leave the second inside a collective that waits for the first
 * (measured on 2 x H200: "CUDA lock did not finish within 10000 ms"). So the locks of one attempt all run at once,
 * each bounded; when any did not finish, those that did are unlocked (the job runs on) and, after a short random pause
 * (the next attempt meets the ranks at another point of their steps), the next attempt tries with twice the bound,
 * until the budget is spent. One task gets one call with the whole budget. Every wait gives up when criu is told to
 * stop ({@link Interrupts}).
 *
 * <p>A task it could not unlock again is never reported as running: {@link NotLocked#stuck()} names it, and the dump
 * keeps it on the agent's watch list and tries again at criu's exit.
 */
final class JobLock {
    private static final Logger log = LoggerFactory.getLogger(JobLock.class);
    /** The first attempt's bound: longer than a training step, short enough for several attempts in criu's 10 s. */
    static final int FIRST_ATTEMPT_MS = 500;
    /** With no budget (criu's --timeout 0) the bounds stop growing here: a lock is never asked to wait for ever. */
    static final int LONGEST_ATTEMPT_MS = 30_000;
    static final int PAUSE_MIN_MS = 10;
    static final int PAUSE_MAX_MS = 100;

    /** A CUDA task of the job and its state when the dump found it. */
    record Member(int pid, CudaState initial) {
    }

    /** What a lock did: the pids it locked (in member order), the attempts it took and its wall time. */
    record Locked(List<Integer> pids, int attempts, long millis) {
    }

    /** The job is not locked; {@code stuck}: tasks that may still be locked (unlock failed, or the agent died). */
    static final class NotLocked extends CriuException {
        private final Set<Integer> stuck;

        NotLocked(int errno, String message, Set<Integer> stuck) {
            super(errno, message);
            this.stuck = Set.copyOf(stuck);
        }

        Set<Integer> stuck() {
            return stuck;
        }
    }

    private final CudaBackend backend;
    private final int firstAttemptMs;
    private final int pauseMinMs;
    private final int pauseMaxMs;
    private final Random random;
    private final TaskWork work = new TaskWork(true);

    JobLock(CudaBackend backend) {
        this(backend, FIRST_ATTEMPT_MS, PAUSE_MIN_MS, PAUSE_MAX_MS, new Random());
    }

    JobLock(CudaBackend backend, int firstAttemptMs, int pauseMinMs, int pauseMaxMs, Random random) {
        if (firstAttemptMs < 1 || pauseMinMs < 0 || pauseMaxMs < pauseMinMs) {
            throw new IllegalArgumentException("bad lock bounds " + firstAttemptMs + "/" + pauseMinMs + "/" + pauseMaxMs);
        }
        this.backend = backend;
        this.firstAttemptMs = firstAttemptMs;
        this.pauseMinMs = pauseMinMs;
        this.pauseMaxMs = pauseMaxMs;
        this.random = random;
    }

    /**
     * Locks every member that is RUNNING; members already LOCKED or CHECKPOINTED are left alone.
     *
     * @param timeoutMs the whole budget; 0 = no limit
     * @throws NotLocked when the budget is spent (ETIMEDOUT) or a lock fails otherwise, every task it could unlock
     *                   running again
     * @throws CriuException when criu is told to stop (the locks go on; the agent answers for them)
     */
    Locked lockAll(List<Member> members, int timeoutMs) {
        List<Integer> pending = new ArrayList<>();
        for (Member m : members) {
            if (Transitions.needsLock(m.initial())) {
                pending.add(m.pid());
            } else {
                log.debug("pid {} was already {} before the dump; it is left so", m.pid(), m.initial().word());
            }
        }
        long t0 = System.nanoTime();
        if (pending.isEmpty()) return new Locked(List.of(), 0, 0);
        long deadline = t0 + timeoutMs * 1_000_000L;
        int bound = pending.size() == 1 || timeoutMs != 0 && timeoutMs < firstAttemptMs ? timeoutMs : firstAttemptMs;
        // the ranks whose lock, in some attempt, did not find their GPU work unfinished (CUDA error 600)
        Set<Integer> notAlwaysBusy = new LinkedHashSet<>();
        for (int attempt = 1; ; attempt++) {
            int attemptMs = timeoutMs == 0 || attempt == 1 ? bound : (int) Math.max(1, Math.min(bound, leftMs(deadline)));
            Map<Integer, Throwable> failed = lockEach(pending, attemptMs);
            if (failed.isEmpty()) {
                long ms = sinceMs(t0);
                if (pending.size() > 1) {
                    log.info("CUDA job locked: {} tasks {} in {} ms, {} attempt(s)", pending.size(), pending, ms, attempt);
                }
                return new Locked(List.copyOf(pending), attempt, ms);
            }
            Set<Integer> stuck = undo(pending, failed);
            for (int pid : pending) {
                if (!(failed.get(pid) instanceof CudaCallException c && c.code() == cuda_h.CUDA_ERROR_NOT_READY)) {
                    notAlwaysBusy.add(pid);
                }
            }
            String tail = pending.size() == 1 ? "the task was left running" : "every task of the job was left running";
            if (!stuck.isEmpty()) {
                int first = stuck.iterator().next();
                Throwable own = failed.get(first);
                throw new NotLocked(Errno.EIO, pids(stuck) + ": CUDA lock " + (own != null ? "failed: "
                        + CudaErrors.describe(own) : "of the job failed (" + lastError(failed) + ")") + "; "
                        + (stuck.size() == 1 ? "it" : "they") + " may still be locked (see above), so the dump is "
                        + "aborted and criu's exit returns " + (stuck.size() == 1 ? "it" : "them"), stuck);
            }
            for (Map.Entry<Integer, Throwable> e : failed.entrySet()) {
                if (timedOut(e.getValue())) continue;
                // not a matter of timing: another attempt would fail the same way
                throw new NotLocked(errno(e.getValue()), "pid " + e.getKey() + ": CUDA lock failed: "
                        + CudaErrors.describe(e.getValue()) + "; " + tail, Set.of());
            }
            if (pending.size() == 1) {
                throw new NotLocked(Errno.ETIMEDOUT, "pid " + pending.getFirst() + ": CUDA lock did not finish within "
                        + timeoutMs + " ms (criu --timeout); the task was left running and the dump is aborted", Set.of());
            }
            int pauseMs = pauseMinMs + random.nextInt(pauseMaxMs - pauseMinMs + 1);
            if (timeoutMs != 0 && leftMs(deadline) - pauseMs < 1) {
                throw new NotLocked(Errno.ETIMEDOUT, "CUDA lock of the job's " + pending.size() + " tasks did not "
                        + "finish: " + attempt + " attempt(s) within " + timeoutMs + " ms (criu --timeout); "
                        + pids(failed.keySet()) + " did not lock (last error: " + lastError(failed) + "); every task "
                        + "was left running and the dump is aborted" + waitingInCollective(pending, notAlwaysBusy), Set.of());
            }
            log.info("CUDA job lock attempt {} ({} ms each): {} did not lock ({}); the others were unlocked, next "
                    + "attempt in {} ms", attempt, attemptMs, failed.keySet(), lastError(failed), pauseMs);
            pause(pauseMs);
            bound = (int) Math.min((long) bound * 2, LONGEST_ATTEMPT_MS);
        }
    }

    /**
     * The ranks whose lock found GPU work unfinished in every attempt while the others locked: they sit inside a GPU
     * collective that waits for a peer (a tensor-parallel server's rank in an NCCL broadcast for the next request,
     * measured on 2 x H200), which no driver can lock.
     */
    private static String waitingInCollective(List<Integer> pending, Set<Integer> notAlwaysBusy) {
        List<Integer> waiting = pending.stream().filter(p -> !notAlwaysBusy.contains(p)).toList();
        if (waiting.isEmpty() || notAlwaysBusy.isEmpty()) return "";
        return "; " + pids(new LinkedHashSet<>(waiting)) + " had GPU work unfinished in every attempt (CUDA error 600) while "
                + "the others locked: " + (waiting.size() == 1 ? "it waits" : "they wait") + " inside a GPU collective for "
                + "a peer that is not coming (an NCCL broadcast for the next request, say), where no lock can stop it; a "
                + "server must wait for work on the host (a gloo or TCP broadcast, a queue) and enter its collectives only "
                + "with work in hand";
    }

    /** Starts every lock at once and waits for all of them (interruptibly); the failures by pid. */
    private Map<Integer, Throwable> lockEach(List<Integer> pids, int timeoutMs) {
        for (int pid : pids) work.submit(pid, () -> backend.lock(pid, timeoutMs));
        Map<Integer, Throwable> failed = new LinkedHashMap<>();
        for (TaskWork.Failure f : work.joinAll("the CUDA lock")) failed.put(f.pid(), f.cause());
        return failed;
    }

    /**
     * Unlocks every task this attempt locked: those whose lock returned, and those whose lock failed but that the
     * driver locked all the same. Returns the tasks that may still be locked: an unlock failed, or the lock call was
     * lost with the agent (it may land yet).
     */
    private Set<Integer> undo(List<Integer> pending, Map<Integer, Throwable> failed) {
        Set<Integer> stuck = new LinkedHashSet<>();
        for (int pid : pending) {
            Throwable f = failed.get(pid);
            if (f instanceof CudaCallException c && c.code() == CudaCallException.AGENT_FAILED) {
                stuck.add(pid);
                continue;
            }
            try {
                if (f == null || backend.state(pid) == CudaState.LOCKED) backend.unlock(pid);
            } catch (CudaCallException e) {
                log.error("pid {}: could not unlock it after a failed lock ({}); its CUDA calls may block until "
                        + "criu's exit or the CUDA agent unlocks it, or `criu-gpu cuda --action unlock --pid {}`",
                        pid, e.getMessage(), pid);
                stuck.add(pid);
            }
        }
        return stuck;
    }

    /** The random pause between attempts, given up like every other wait when criu is told to stop. */
    private static void pause(int ms) {
        try {
            Interrupts.await(new CompletableFuture<Void>(), "the pause between attempts to lock the CUDA job", ms);
        } catch (TimeoutException e) {
            // the pause is over
        } catch (ExecutionException e) {
            throw new IllegalStateException("a future nobody completes failed", e);
        }
    }

    private static boolean timedOut(Throwable t) {
        return t instanceof CudaCallException c && CudaErrors.errno(c) == Errno.ETIMEDOUT;
    }

    private static int errno(Throwable t) {
        return t instanceof CudaCallException c ? CudaErrors.errno(c) : Errno.EIO;
    }

    private static String pids(Set<Integer> pids) {
        return pids.stream().map(p -> "pid " + p).collect(Collectors.joining(", "));
    }

    private static String lastError(Map<Integer, Throwable> failed) {
        Map.Entry<Integer, Throwable> e = failed.entrySet().stream().reduce((a, b) -> b).orElseThrow();
        return "pid " + e.getKey() + ": " + CudaErrors.describe(e.getValue());
    }

    private static long leftMs(long deadline) {
        return (deadline - System.nanoTime()) / 1_000_000;
    }

    private static long sinceMs(long t0) {
        return (System.nanoTime() - t0) / 1_000_000;
    }
}

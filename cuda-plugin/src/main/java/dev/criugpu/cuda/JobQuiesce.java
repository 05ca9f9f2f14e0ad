package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.Interrupts;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.Transitions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;

/**
 * Locks every CUDA task of a job together. A lock waits for the GPU work its task already submitted, and the work of
 * a rank inside a collective (NCCL) finishes only once its peers' part of the collective runs too: locking ranks one
 * after another leaves the rank locked second inside a collective that waits for the rank locked first (measured on
 * 2 x H200 with back-to-back all-reduces: "CUDA lock did not finish within 10000 ms"). So here the locks of one
 * attempt all run at once, each bounded; when any of them did not finish, those that did are unlocked (the job runs
 * on), and after a short random pause (so that the next attempt meets the ranks at another point of their steps) the
 * next attempt tries with twice the bound, until the budget (criu's --timeout) is spent. Every wait gives up when
 * criu is told to stop ({@link Interrupts}). One task is locked exactly as before: one call with the whole budget.
 *
 * <p>How DumpSession calls it, at the first PAUSE_DEVICES of a dump (criu calls it for the tree's root before it
 * seizes anything, so the whole job still runs; the root itself may hold no CUDA, as a launcher):
 * <ol>
 * <li>{@code ProcessTree.of(root)} lists the tree; each pid whose {@code backend.restoreThread(pid)} is present is a
 *     member, with {@code backend.state(pid)} as its initial state (FAILED refuses the dump, as pause does now);</li>
 * <li>every member that {@link Transitions#needsCheckpoint} is handed to the agent's watch first (DESIGN rule 12: a
 *     lock cut short by a stop signal goes on in the background, and the agent answers for it);</li>
 * <li>{@code new JobQuiesce(backend).lockAll(members, lockTimeoutMs)}: the pids in {@link Locked#pids()} are
 *     LOCKED now ({@code task.current}), so their own PAUSE_DEVICES return at once; a {@link CriuException} is the
 *     hook's answer, with every task it locked unlocked again.</li>
 * </ol>
 * With CRIU_CUDA_QUIESCE=0 each PAUSE_DEVICES locks its own task, as before.
 */
final class JobQuiesce {
    private static final Logger log = LoggerFactory.getLogger(JobQuiesce.class);
    /** The first attempt's bound: longer than a training step, short enough for several attempts in criu's 10 s. */
    static final int FIRST_ATTEMPT_MS = 500;
    /** With criu's --timeout 0 (no limit) the bounds stop growing here: a lock is never asked to wait for ever. */
    static final int LONGEST_ATTEMPT_MS = 30_000;
    static final int PAUSE_MIN_MS = 10;
    static final int PAUSE_MAX_MS = 100;

    /** A CUDA task of the job and its state when the dump found it. */
    record Member(int pid, CudaState initial) {
    }

    /** What a quiesce did: the pids it locked (in member order), the attempts it took and its wall time. */
    record Locked(List<Integer> pids, int attempts, long millis) {
    }

    private final CudaBackend backend;
    private final int firstAttemptMs;
    private final int pauseMinMs;
    private final int pauseMaxMs;
    private final Random random;
    private final TaskWork work = new TaskWork(true);

    JobQuiesce(CudaBackend backend) {
        this(backend, FIRST_ATTEMPT_MS, PAUSE_MIN_MS, PAUSE_MAX_MS, new Random());
    }

    JobQuiesce(CudaBackend backend, int firstAttemptMs, int pauseMinMs, int pauseMaxMs, Random random) {
        if (firstAttemptMs < 1 || pauseMinMs < 0 || pauseMaxMs < pauseMinMs) {
            throw new IllegalArgumentException("bad quiesce bounds " + firstAttemptMs + "/" + pauseMinMs + "/" + pauseMaxMs);
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
     * @param timeoutMs the whole budget (criu's --timeout); 0 = no limit
     * @throws CriuException when the budget is spent (ETIMEDOUT), a lock fails otherwise, or criu is told to stop
     */
    Locked lockAll(List<Member> members, int timeoutMs) {
        List<Integer> pending = new ArrayList<>();
        for (Member m : members) {
            if (Transitions.needsLock(m.initial())) {
                pending.add(m.pid());
            } else {
                log.debug("pid {} was already {} before the dump; the quiesce leaves it so", m.pid(), m.initial().word());
            }
        }
        long t0 = System.nanoTime();
        if (pending.isEmpty()) return new Locked(List.of(), 0, 0);
        if (pending.size() == 1) {
            lockOne(pending.getFirst(), timeoutMs);
            return new Locked(List.copyOf(pending), 1, sinceMs(t0));
        }
        long deadline = t0 + timeoutMs * 1_000_000L;
        int bound = firstAttemptMs;
        for (int attempt = 1; ; attempt++) {
            int attemptMs = timeoutMs == 0 ? bound : (int) Math.max(1, Math.min(bound, leftMs(deadline)));
            Map<Integer, Throwable> failed = lockEach(pending, attemptMs);
            if (failed.isEmpty()) {
                long ms = sinceMs(t0);
                log.info("CUDA job locked: {} tasks {} in {} ms, {} attempt(s)", pending.size(), pending, ms, attempt);
                return new Locked(List.copyOf(pending), attempt, ms);
            }
            undo(pending, failed);
            String last = lastError(failed);
            for (Map.Entry<Integer, Throwable> e : failed.entrySet()) {
                if (timedOut(e.getValue())) continue;
                // not a matter of timing: another attempt would fail the same way
                throw new CriuException(errno(e.getValue()), "pid " + e.getKey() + ": CUDA lock failed: "
                        + CudaErrors.describe(e.getValue()) + "; every task of the job was left running");
            }
            int pauseMs = pauseMinMs + random.nextInt(pauseMaxMs - pauseMinMs + 1);
            if (timeoutMs != 0 && leftMs(deadline) - pauseMs < 1) {
                throw new CriuException(Errno.ETIMEDOUT, "CUDA lock of the job's " + pending.size() + " tasks did not "
                        + "finish: " + attempt + " attempt(s) within " + timeoutMs + " ms (criu --timeout); "
                        + failed.keySet().stream().map(p -> "pid " + p).collect(Collectors.joining(", "))
                        + " did not lock (last error: " + last + "); every task was left running and the dump is aborted");
            }
            log.info("CUDA job lock attempt {} ({} ms each): {} did not lock ({}); the others were unlocked, next "
                    + "attempt in {} ms", attempt, attemptMs, failed.keySet(), last, pauseMs);
            pause(pauseMs);
            bound = (int) Math.min((long) bound * 2, LONGEST_ATTEMPT_MS);
        }
    }

    /** Today's single lock: one call with the whole budget, the same lines when it fails. */
    private void lockOne(int pid, int timeoutMs) {
        Throwable failure = lockEach(List.of(pid), timeoutMs).get(pid);
        if (failure == null) return;
        unlockIfLocked(pid);
        if (timedOut(failure)) {
            throw new CriuException(Errno.ETIMEDOUT, "pid " + pid + ": CUDA lock did not finish within " + timeoutMs
                    + " ms (criu --timeout); the task was left running and the dump is aborted");
        }
        throw new CriuException(errno(failure), "pid " + pid + ": CUDA lock failed: " + CudaErrors.describe(failure)
                + "; the task was left running");
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
     * driver locked all the same. A task that cannot be unlocked ends the dump (its CUDA calls would block).
     */
    private void undo(List<Integer> pending, Map<Integer, Throwable> failed) {
        List<String> stuck = new ArrayList<>();
        for (int pid : pending) {
            try {
                if (!failed.containsKey(pid)) {
                    backend.unlock(pid);
                } else if (backend.state(pid) == CudaState.LOCKED) {
                    backend.unlock(pid);
                }
            } catch (CudaCallException e) {
                log.error("pid {}: could not unlock it after a failed attempt to lock the job ({}); its CUDA calls may "
                        + "block until `criu-gpu cuda --action unlock --pid {}`", pid, e.getMessage(), pid);
                stuck.add("pid " + pid);
            }
        }
        if (!stuck.isEmpty()) {
            throw new CriuException(Errno.EIO, "the CUDA lock of the job failed and " + String.join(", ", stuck)
                    + " could not be unlocked again (see above); the dump is aborted");
        }
    }

    private void unlockIfLocked(int pid) {
        try {
            if (backend.state(pid) == CudaState.LOCKED) backend.unlock(pid);
        } catch (CudaCallException e) {
            log.error("pid {}: could not unlock after a failed lock ({}); its CUDA calls may block until "
                    + "`criu-gpu cuda --action unlock --pid {}`", pid, e.getMessage(), pid);
        }
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

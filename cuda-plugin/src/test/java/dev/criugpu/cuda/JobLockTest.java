package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.cuda.JobLock.Member;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.bindings.cuda_h;
import dev.criugpu.cuda.state.CudaState;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Locking a job whose tasks wait on each other's GPU work (NCCL ranks), against {@link CollectiveDriver}: the ranks'
 * locks complete only when they run at the same time.
 */
class JobLockTest {
    private static final int A = 101, B = 102, C = 103;

    private static JobLock quiesce(CollectiveDriver driver, int firstAttemptMs) {
        return new JobLock(driver, firstAttemptMs, 1, 5, new Random(7));
    }

    private static List<Member> running(int... pids) {
        return java.util.Arrays.stream(pids).mapToObj(p -> new Member(p, CudaState.RUNNING)).toList();
    }

    @Test
    void ranksLockedOneAfterAnotherTimeOutButTogetherTheyLock() {
        // today's way: the first rank's lock waits for a collective its peer is not locked in
        CollectiveDriver oneByOne = new CollectiveDriver().rank(A).rank(B);
        CudaCallException e = assertThrows(CudaCallException.class, () -> oneByOne.lock(A, 200));
        assertEquals(cuda_h.CUDA_ERROR_TIMEOUT, e.code());
        assertEquals(CudaState.RUNNING, oneByOne.stateOf(A));

        CollectiveDriver driver = new CollectiveDriver().rank(A).rank(B);
        JobLock.Locked locked = quiesce(driver, 5_000).lockAll(running(A, B), 60_000);

        assertEquals(List.of(A, B), locked.pids());
        assertEquals(CudaState.LOCKED, driver.stateOf(A));
        assertEquals(CudaState.LOCKED, driver.stateOf(B));
        // every attempt locked both ranks; every failed one (a worker started late) unlocked them again
        assertEquals(locked.attempts(), driver.count("lock " + A), driver.calls().toString());
        assertEquals(locked.attempts() - 1, driver.count("unlock " + A), driver.calls().toString());
    }

    @Test
    void aTaskThatNeverLocksFailsTheQuiesceWithOneLineAndLeavesEveryTaskRunning() {
        CollectiveDriver driver = new CollectiveDriver().rank(A).rank(B).stuck(C);

        CriuException e = assertThrows(CriuException.class,
                () -> quiesce(driver, 40).lockAll(running(A, B, C), 400));

        assertEquals(Errno.ETIMEDOUT, e.errno());
        Matcher m = Pattern.compile("CUDA lock of the job's 3 tasks did not finish: (\\d+) attempt\\(s\\) within 400 ms "
                + "\\(criu --timeout\\); pid " + C + " did not lock \\(last error: pid " + C + ": the lock of pid " + C
                + " timed out \\(CUDA error 909\\)\\); every task was left running and the dump is aborted").matcher(e.getMessage());
        assertTrue(m.matches(), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
        long attempts = Long.parseLong(m.group(1));
        for (int pid : new int[] {A, B, C}) {
            assertEquals(CudaState.RUNNING, driver.stateOf(pid), "pid " + pid);
            assertEquals(attempts, driver.count("lock " + pid), "pid " + pid + ": " + driver.calls());
        }
        // the ranks locked in every attempt and were unlocked after each; the stuck task never needed it
        assertEquals(attempts, driver.count("unlock " + A));
        assertEquals(attempts, driver.count("unlock " + B));
        assertEquals(0, driver.count("unlock " + C));
        // the bounds grow: 40 ms, then 80 ms, ... never past what is left of the budget
        assertEquals("lock " + C + " 40", driver.calls().stream().filter(c -> c.startsWith("lock " + C)).findFirst().orElseThrow());
    }

    @Test
    void aLockFailureThatIsNotATimeoutEndsAtOnceWithTheOthersUnlocked() {
        CollectiveDriver driver = new CollectiveDriver().rank(A).rank(B).failing(C, cuda_h.CUDA_ERROR_NOT_PERMITTED);

        CriuException e = assertThrows(CriuException.class,
                () -> quiesce(driver, 5_000).lockAll(running(A, B, C), 60_000));

        assertEquals(Errno.EPERM, e.errno());
        assertEquals("pid " + C + ": CUDA lock failed: planted lock failure (CUDA error 800); every task of the job was "
                + "left running", e.getMessage());
        assertEquals(1, driver.count("lock " + A));
        for (int pid : new int[] {A, B, C}) assertEquals(CudaState.RUNNING, driver.stateOf(pid), "pid " + pid);
    }

    @Test
    void criuToldToStopWhileTheLocksWaitGivesUpAtOnce() throws Exception {
        CollectiveDriver driver = new CollectiveDriver().rank(A).rank(B).stuck(C);
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread hook = new Thread(() -> {
            try {
                quiesce(driver, 60_000).lockAll(running(A, B, C), 0);
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        }, "pause-devices");
        hook.start();
        try {
            assertTrue(driver.stuckLockWaiting.await(30, TimeUnit.SECONDS), "the stuck lock never started");
            hook.interrupt();
            Throwable t = outcome.get(10, TimeUnit.SECONDS);
            CriuException e = assertTrouble(t);
            assertEquals(Errno.EINTR, e.errno());
            assertTrue(e.getMessage().startsWith("interrupted while waiting for the CUDA lock of pid "), e.getMessage());
        } finally {
            driver.releaseStuck.countDown();
            hook.join(10_000);
        }
    }

    @Test
    void criuToldToStopDuringThePauseBetweenAttemptsGivesUp() throws Exception {
        CollectiveDriver driver = new CollectiveDriver().rank(A).rank(B).failing(C, cuda_h.CUDA_ERROR_TIMEOUT);
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread hook = new Thread(() -> {
            try {
                // a pause of a minute: only giving up can end this test in time
                new JobLock(driver, 1_000, 60_000, 60_000, new Random(7)).lockAll(running(A, B, C), 0);
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        }, "pause-devices");
        hook.start();
        assertTrue(driver.twoUnlocks.await(30, TimeUnit.SECONDS), "the first attempt was never undone");
        hook.interrupt();
        CriuException e = assertTrouble(outcome.get(10, TimeUnit.SECONDS));
        hook.join(10_000);
        assertEquals(Errno.EINTR, e.errno());
        assertEquals("interrupted while waiting for the pause between attempts to lock the CUDA job", e.getMessage());
        assertEquals(1, driver.count("lock " + A));
        for (int pid : new int[] {A, B, C}) assertEquals(CudaState.RUNNING, driver.stateOf(pid), "pid " + pid);
    }

    private static CriuException assertTrouble(Throwable t) {
        if (t instanceof CriuException e) return e;
        throw new AssertionError("expected a CriuException, got " + t, t);
    }

    @Test
    void tasksLockedOrCheckpointedBeforeTheDumpAreLeftAlone() {
        CollectiveDriver driver = new CollectiveDriver().task(A, CudaState.LOCKED).task(B, CudaState.CHECKPOINTED)
                .task(C, CudaState.RUNNING);

        JobLock.Locked locked = quiesce(driver, 40).lockAll(List.of(new Member(A, CudaState.LOCKED),
                new Member(B, CudaState.CHECKPOINTED), new Member(C, CudaState.RUNNING)), 9_000);

        assertEquals(List.of(C), locked.pids());
        assertEquals(List.of("lock " + C + " 9000"), driver.calls());
        assertEquals(CudaState.LOCKED, driver.stateOf(A));
        assertEquals(CudaState.CHECKPOINTED, driver.stateOf(B));

        CollectiveDriver none = new CollectiveDriver().task(A, CudaState.LOCKED);
        assertEquals(List.of(), quiesce(none, 40).lockAll(List.of(new Member(A, CudaState.LOCKED)), 9_000).pids());
        assertEquals(List.of(), none.calls());
    }

    @Test
    void oneTaskIsOneLockCallWithTheWholeTimeout() {
        CollectiveDriver driver = new CollectiveDriver().task(A, CudaState.RUNNING);

        JobLock.Locked locked = quiesce(driver, 40).lockAll(running(A), 7_000);

        assertEquals(List.of(A), locked.pids());
        assertEquals(1, locked.attempts());
        assertEquals(List.of("lock " + A + " 7000"), driver.calls());
        assertEquals(CudaState.LOCKED, driver.stateOf(A));
    }

    @Test
    void oneTaskThatTimesOutFailsWithTodaysLine() {
        CollectiveDriver driver = new CollectiveDriver().failing(A, cuda_h.CUDA_ERROR_TIMEOUT);

        CriuException e = assertThrows(CriuException.class, () -> quiesce(driver, 40).lockAll(running(A), 7_000));

        assertEquals(Errno.ETIMEDOUT, e.errno());
        assertEquals("pid " + A + ": CUDA lock did not finish within 7000 ms (criu --timeout); the task was left running "
                + "and the dump is aborted", e.getMessage());
        assertEquals(List.of("lock " + A + " 7000", "state " + A), driver.calls());
        assertEquals(CudaState.RUNNING, driver.stateOf(A));
    }

    /** A rank idling inside a collective (its GPU work never finishes, CUDA error 600) is named with what to do. */
    @Test
    void aRankBusyInEveryAttemptWhileTheOthersLockIsNamedAsWaitingInACollective() {
        CollectiveDriver driver = new CollectiveDriver().rank(A).rank(B).failing(C, cuda_h.CUDA_ERROR_NOT_READY);

        CriuException e = assertThrows(CriuException.class, () -> quiesce(driver, 40).lockAll(running(A, B, C), 400));

        assertEquals(Errno.ETIMEDOUT, e.errno());
        assertTrue(e.getMessage().contains("; pid " + C + " had GPU work unfinished in every attempt (CUDA error 600) "
                + "while the others locked: it waits inside a GPU collective for a peer"), e.getMessage());
        assertTrue(e.getMessage().endsWith("a server must wait for work on the host (a gloo or TCP broadcast, a queue) "
                + "and enter its collectives only with work in hand"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
        for (int pid : new int[] {A, B, C}) assertEquals(CudaState.RUNNING, driver.stateOf(pid), "pid " + pid);
    }
}

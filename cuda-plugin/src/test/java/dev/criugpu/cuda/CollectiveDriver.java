package dev.criugpu.cuda;

import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.bindings.cuda_h;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.state.CudaState;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The driver's lock as NCCL ranks meet it: a lock waits for the task's submitted work, and a rank's work is a
 * collective that finishes only while every rank of its group is inside it too. So a rank's lock completes only when
 * every rank of the group is being locked at the same moment (all of them reach the end of the collective and submit
 * nothing more); a rank locked alone waits its timeout and fails with CUDA_ERROR_TIMEOUT, as does a rank whose peer
 * is already locked. Tasks outside the group lock at once; a "stuck" task never locks (its lock waits the timeout,
 * or fails at once when planted so). Every call is recorded in order.
 */
final class CollectiveDriver implements CudaBackend {
    private final Map<Integer, CudaState> states = new HashMap<>();
    private final Set<Integer> group = new HashSet<>();
    private final Set<Integer> stuck = new HashSet<>();
    private final Map<Integer, Integer> failAtOnce = new HashMap<>();
    private final List<String> calls = new ArrayList<>();
    /** Ranks inside the current collective, waiting for the others. */
    private final Set<Integer> arrived = new HashSet<>();
    /** Advances each time every rank of the group was being locked at once. */
    private long collectives;
    /** Counted down when a stuck task's lock starts waiting. */
    final CountDownLatch stuckLockWaiting = new CountDownLatch(1);
    /** Counted down by every unlock (from 2: both ranks of a failed attempt unlocked again). */
    final CountDownLatch twoUnlocks = new CountDownLatch(2);
    /** Ends every stuck task's wait early (with the timeout error), so a test leaves no worker waiting. */
    final CountDownLatch releaseStuck = new CountDownLatch(1);

    /** A RUNNING rank of the collective group. */
    synchronized CollectiveDriver rank(int pid) {
        states.put(pid, CudaState.RUNNING);
        group.add(pid);
        return this;
    }

    /** A task outside the group, in {@code state}. */
    synchronized CollectiveDriver task(int pid, CudaState state) {
        states.put(pid, state);
        return this;
    }

    /** A RUNNING task whose lock never completes. */
    synchronized CollectiveDriver stuck(int pid) {
        states.put(pid, CudaState.RUNNING);
        stuck.add(pid);
        return this;
    }

    /** A RUNNING task whose every lock fails at once with {@code code}. */
    synchronized CollectiveDriver failing(int pid, int code) {
        states.put(pid, CudaState.RUNNING);
        failAtOnce.put(pid, code);
        return this;
    }

    synchronized CudaState stateOf(int pid) {
        return states.get(pid);
    }

    synchronized List<String> calls() {
        return List.copyOf(calls);
    }

    synchronized long count(String call) {
        return calls.stream().filter(c -> c.equals(call) || c.startsWith(call + " ")).count();
    }

    @Override public String describe() { return "collective fake driver"; }
    @Override public String name() { return "driver"; }
    @Override public boolean supportsGpuRemap() { return false; }

    @Override
    public synchronized OptionalInt restoreThread(int pid) {
        return states.containsKey(pid) ? OptionalInt.of(pid) : OptionalInt.empty();
    }

    @Override
    public synchronized CudaState state(int pid) throws CudaCallException {
        calls.add("state " + pid);
        return require(pid);
    }

    @Override
    public void lock(int pid, int timeoutMs) throws CudaCallException {
        synchronized (this) {
            calls.add("lock " + pid + " " + timeoutMs);
            if (require(pid) != CudaState.RUNNING) throw illegal("lock", pid);
            Integer code = failAtOnce.get(pid);
            if (code != null) throw new CudaCallException(code, "planted lock failure");
        }
        if (stuck.contains(pid)) {
            stuckLockWaiting.countDown();
            try {
                releaseStuck.await(timeoutMs, TimeUnit.MILLISECONDS); // the driver gives up after the timeout
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            throw timeout(pid);
        }
        if (group.contains(pid)) {
            joinCollective(pid, timeoutMs);
        }
        synchronized (this) {
            states.put(pid, CudaState.LOCKED);
        }
    }

    /** Returns once every rank is being locked together; throws the timeout error when they were not, in time. */
    private synchronized void joinCollective(int pid, int timeoutMs) throws CudaCallException {
        long round = collectives;
        arrived.add(pid);
        if (arrived.containsAll(group)) {
            arrived.clear();
            collectives++;
            notifyAll();
            return;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (collectives == round) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                arrived.remove(pid);
                throw timeout(pid);
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                arrived.remove(pid);
                throw timeout(pid);
            }
        }
    }

    @Override
    public synchronized void checkpoint(int pid) throws CudaCallException {
        calls.add("checkpoint " + pid);
        move(pid, "checkpoint", CudaState.LOCKED, CudaState.CHECKPOINTED);
    }

    @Override
    public synchronized void restore(int pid, List<GpuPair> pairs) throws CudaCallException {
        calls.add("restore " + pid);
        move(pid, "restore", CudaState.CHECKPOINTED, CudaState.LOCKED);
    }

    @Override
    public synchronized void unlock(int pid) throws CudaCallException {
        calls.add("unlock " + pid);
        move(pid, "unlock", CudaState.LOCKED, CudaState.RUNNING);
        twoUnlocks.countDown();
    }

    private void move(int pid, String action, CudaState from, CudaState to) throws CudaCallException {
        if (require(pid) != from) throw illegal(action, pid);
        states.put(pid, to);
    }

    private CudaState require(int pid) throws CudaCallException {
        CudaState s = states.get(pid);
        if (s == null) throw new CudaCallException(cuda_h.CUDA_ERROR_INVALID_VALUE, "pid " + pid + " has no CUDA state");
        return s;
    }

    private CudaCallException illegal(String action, int pid) {
        return new CudaCallException(cuda_h.CUDA_ERROR_ILLEGAL_STATE, action + " of pid " + pid + " in state " + states.get(pid));
    }

    private static CudaCallException timeout(int pid) {
        return new CudaCallException(cuda_h.CUDA_ERROR_TIMEOUT, "the lock of pid " + pid + " timed out");
    }
}

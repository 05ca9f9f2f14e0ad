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

/**
 * The CUDA checkpoint API as the driver answers it, in memory: each pid with CUDA has a state and follows the
 * driver's rules (RUNNING -lock-> LOCKED -checkpoint-> CHECKPOINTED -restore-> LOCKED -unlock-> RUNNING; any other
 * action fails as the driver does); a pid without CUDA has no restore thread; every call but the restore-thread
 * query needs that thread running when criu holds the task stopped. Failures can be planted per pid and
 * action. Every call is appended to {@link #events} (shared with the other fakes, to check ordering).
 */
final class FakeDriver implements CudaBackend {
    private final Map<Integer, CudaState> states = new HashMap<>();
    private final Map<String, CudaCallException> planted = new HashMap<>();
    private final Set<String> once = new HashSet<>();
    final Events events;
    private final FakeThreads threads;

    FakeDriver(Events events, FakeThreads threads) {
        this.events = events;
        this.threads = threads;
    }

    /** A call the real driver would never answer: fail the test instead of hanging it. */
    private void requireServed(String call, int pid) {
        if (!threads.served(pid)) {
            throw new AssertionError(call + " of pid " + pid + " while criu holds it stopped and its restore thread"
                    + " sleeps: the driver would never answer");
        }
    }

    synchronized FakeDriver cuda(int pid, CudaState state) {
        states.put(pid, state);
        return this;
    }

    synchronized CudaState state(int pid, boolean quiet) {
        return states.get(pid);
    }

    /** The next {@code action} on {@code pid} fails with {@code code} (once, or every time). */
    synchronized FakeDriver fail(int pid, String action, int code, boolean always) {
        planted.put(action + " " + pid, new CudaCallException(code, "planted " + action + " failure"));
        if (!always) once.add(action + " " + pid);
        return this;
    }

    private synchronized void maybeFail(String action, int pid) throws CudaCallException {
        String key = action + " " + pid;
        CudaCallException e = planted.get(key);
        if (e == null) return;
        if (once.remove(key)) planted.remove(key);
        throw e;
    }

    private synchronized CudaState require(int pid) throws CudaCallException {
        CudaState s = states.get(pid);
        if (s == null) throw new CudaCallException(cuda_h.CUDA_ERROR_INVALID_VALUE, "pid " + pid + " has no CUDA state");
        return s;
    }

    private synchronized void move(int pid, String action, CudaState from, CudaState to) throws CudaCallException {
        events.add(action + " " + pid);
        requireServed(action, pid);
        maybeFail(action, pid);
        if (require(pid) != from) {
            throw new CudaCallException(cuda_h.CUDA_ERROR_ILLEGAL_STATE, action + " of pid " + pid + " in state " + states.get(pid));
        }
        states.put(pid, to);
    }

    @Override public String describe() { return "fake driver"; }
    @Override public String name() { return "driver"; }
    @Override public boolean supportsGpuRemap() { return true; }

    @Override
    public synchronized OptionalInt restoreThread(int pid) throws CudaCallException {
        events.add("restore-tid " + pid);
        maybeFail("restore-tid", pid);
        return states.containsKey(pid) ? OptionalInt.of(pid) : OptionalInt.empty();
    }

    @Override
    public synchronized CudaState state(int pid) throws CudaCallException {
        events.add("state " + pid);
        requireServed("state", pid);
        return require(pid);
    }

    @Override
    public void lock(int pid, int timeoutMs) throws CudaCallException {
        move(pid, "lock", CudaState.RUNNING, CudaState.LOCKED);
    }

    @Override
    public void checkpoint(int pid) throws CudaCallException {
        move(pid, "checkpoint", CudaState.LOCKED, CudaState.CHECKPOINTED);
    }

    @Override
    public void restore(int pid, List<GpuPair> pairs) throws CudaCallException {
        move(pid, "restore", CudaState.CHECKPOINTED, CudaState.LOCKED);
    }

    @Override
    public void unlock(int pid) throws CudaCallException {
        move(pid, "unlock", CudaState.LOCKED, CudaState.RUNNING);
    }

    /** The shared, ordered record of what every fake was asked to do. */
    static final class Events {
        private final List<String> list = new ArrayList<>();

        synchronized void add(String e) {
            list.add(e);
        }

        synchronized List<String> all() {
            return List.copyOf(list);
        }

        synchronized List<String> about(int pid) {
            return list.stream().filter(e -> e.endsWith(" " + pid)).toList();
        }
    }
}

package dev.criugpu.cuda;

import dev.criugpu.cuda.agent.WatchedTask;
import dev.criugpu.cuda.agent.AgentLink;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.state.CudaState;

import java.io.IOException;
import java.util.List;
import java.util.OptionalInt;

/**
 * The CUDA agent as criu's JVM sees it, in front of the in-memory driver, that can die at a chosen point: right after
 * a call (its answer came back), or during one (the driver did it, the answer never came). Once dead every call fails
 * as {@code AgentClient}'s do and {@link #gone()} says so; what it was told to watch goes to the shared event record.
 */
final class FakeAgent implements CudaBackend, AgentLink {
    private final FakeDriver driver;
    private final FakeDriver.Events events;
    private volatile boolean dead;
    private String dieAfter;
    private String dieDuring;

    FakeAgent(FakeDriver driver) {
        this.driver = driver;
        this.events = driver.events;
    }

    /** Dies once {@code action} of {@code pid} has answered. */
    synchronized FakeAgent dieAfter(String action, int pid) {
        dieAfter = action + " " + pid;
        return this;
    }

    /** Dies while making {@code action} of {@code pid}: the driver does it, criu gets no answer. */
    synchronized FakeAgent dieDuring(String action, int pid) {
        dieDuring = action + " " + pid;
        return this;
    }

    /** A new agent for the next dump of the test. */
    synchronized void revive() {
        dead = false;
        dieAfter = null;
        dieDuring = null;
    }

    void die() {
        dead = true;
        events.add("agent-died");
    }

    @Override
    public boolean gone() {
        return dead;
    }

    private interface Call<T> {
        T run() throws CudaCallException;
    }

    private <T> T call(String action, int pid, Call<T> c) throws CudaCallException {
        if (dead) throw new CudaCallException(CudaCallException.AGENT_FAILED, "the CUDA agent died");
        T v = c.run();
        String key = action + " " + pid;
        synchronized (this) {
            if (key.equals(dieDuring)) {
                die();
                throw new CudaCallException(CudaCallException.AGENT_FAILED, "the CUDA agent died before it answered");
            }
            if (key.equals(dieAfter)) die();
        }
        return v;
    }

    @Override public String describe() { return "the fake driver in the CUDA agent"; }
    @Override public String name() { return "driver"; }
    @Override public boolean supportsGpuRemap() { return true; }

    @Override
    public OptionalInt restoreThread(int pid) throws CudaCallException {
        return call("restore-tid", pid, () -> driver.restoreThread(pid));
    }

    @Override
    public CudaState state(int pid) throws CudaCallException {
        return call("state", pid, () -> driver.state(pid));
    }

    @Override
    public void lock(int pid, int timeoutMs) throws CudaCallException {
        call("lock", pid, () -> { driver.lock(pid, timeoutMs); return null; });
    }

    @Override
    public void checkpoint(int pid) throws CudaCallException {
        call("checkpoint", pid, () -> { driver.checkpoint(pid); return null; });
    }

    @Override
    public void restore(int pid, List<GpuPair> pairs) throws CudaCallException {
        call("restore", pid, () -> { driver.restore(pid, pairs); return null; });
    }

    @Override
    public void unlock(int pid) throws CudaCallException {
        call("unlock", pid, () -> { driver.unlock(pid); return null; });
    }

    @Override
    public void watch(WatchedTask task) throws IOException {
        if (dead) throw new IOException("the CUDA agent died");
        events.add("watch " + task.initial().word() + " " + task.pid());
    }

    @Override
    public void returned(int pid) throws IOException {
        if (dead) throw new IOException("the CUDA agent died");
        events.add("returned " + pid);
    }

    @Override
    public void done() throws IOException {
        if (dead) throw new IOException("the CUDA agent died");
        events.add("agent-done");
    }

    @Override
    public void blocked(int pid, int tid, long savedMask) throws IOException {
        if (dead) throw new IOException("the CUDA agent died");
    }

    @Override
    public void unblocked(int pid, int tid) throws IOException {
        if (dead) throw new IOException("the CUDA agent died");
    }
}

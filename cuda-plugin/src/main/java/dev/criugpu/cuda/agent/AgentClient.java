package dev.criugpu.cuda.agent;

import dev.criugpu.api.HelperProcess;
import dev.criugpu.api.Interrupts;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.state.CudaState;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

/**
 * criu's side of the {@link CudaAgent}: a {@link CudaBackend} whose calls the agent makes, and the dump's
 * {@link AgentLink}. The agent is started when the plugin's dump begins and comes up while criu goes on; the
 * first call waits for it. Every wait gives up when criu is told to stop ({@link Interrupts}): criu then ends at once,
 * and the agent finishes or undoes what is still running.
 */
public final class AgentClient implements CudaBackend, AgentLink {
    /** The agent's JVM: small, quick to start, deaf to the signals meant for criu (-Xrs). */
    static final List<String> JVM_OPTIONS = List.of("-Xrs", "-Xmx48m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData", "-Xlog:disable", "-Xlog:all=off", "--enable-native-access=ALL-UNNAMED");

    private final AgentConnection connection;

    private AgentClient(AgentConnection connection) {
        this.connection = connection;
    }

    /**
     * Starts the agent for this criu, on a thread of its own (starting a process costs tens of milliseconds the dump
     * need not wait for), or adopts the one the shim started before criu's JVM; that thread sends its arguments, and
     * the agent opens its backend while criu's JVM finishes its own start. The first call waits for it to be ready.
     *
     * @param backend which backend the agent opens: {@code auto}, {@code driver} or {@code cli} (CRIU_CUDA_BACKEND);
     *                cuda-checkpoint is looked up in criu's PATH, which the agent inherits, and must be trusted
     * @param settleMs how long a returned task must stay put before the agent is done with it
     * @param jvmOptions extra JVM options (the plugin dir's AOT cache)
     * @param adopt whether to take the agent the shim started ({@link HelperProcess#adoptPreStarted}), if any
     */
    public static AgentClient launch(String backend, long settleMs, List<String> jvmOptions, boolean adopt) {
        return new AgentClient(AgentConnection.launch(backend, settleMs, jvmOptions, adopt));
    }

    /** The agent's JVM options: its own, then {@code extra}. */
    public static List<String> jvmOptions(List<String> extra) {
        List<String> options = new ArrayList<>(JVM_OPTIONS);
        options.addAll(extra);
        return options;
    }

    /**
     * The agent's log file, which criu's side creates new (an earlier dump's was removed by criu) once it knows its
     * images directory, and hands to the agent as an fd. Before the first call.
     */
    public AgentClient logTo(Path file) {
        connection.logTo(file);
        return this;
    }

    @Override
    public java.util.Optional<String> unavailable() {
        try {
            connection.agent();
            return java.util.Optional.empty();
        } catch (CudaCallException e) {
            return java.util.Optional.of(e.reason());
        }
    }

    @Override
    public String describe() {
        return connection.backend().description();
    }

    @Override
    public String name() {
        return connection.backend().name();
    }

    /** Valid once a call has been made (the agent said which driver it found). */
    @Override
    public int apiVersion() {
        return connection.backend().apiVersion();
    }

    @Override
    public boolean supportsGpuRemap() {
        return connection.backend().remap();
    }

    // the driver calls, each through its AgentOp

    @Override
    public OptionalInt restoreThread(int pid) throws CudaCallException {
        return connection.call(AgentOp.RESTORE_TID, pid, null);
    }

    @Override
    public CudaState state(int pid) throws CudaCallException {
        return connection.call(AgentOp.STATE, pid, null);
    }

    @Override
    public void lock(int pid, int timeoutMs) throws CudaCallException {
        connection.call(AgentOp.LOCK, pid, timeoutMs);
    }

    @Override
    public void checkpoint(int pid) throws CudaCallException {
        connection.call(AgentOp.CHECKPOINT, pid, null);
    }

    @Override
    public void restore(int pid, List<GpuPair> pairs) throws CudaCallException {
        connection.call(AgentOp.RESTORE, pid, pairs);
    }

    @Override
    public void unlock(int pid) throws CudaCallException {
        connection.call(AgentOp.UNLOCK, pid, null);
    }

    @Override
    public void prepareRestore() throws CudaCallException {
        connection.call(AgentOp.PREPARE_RESTORE, 0, null);
    }

    @Override
    public void watch(WatchedTask task) throws IOException {
        connection.send(task);
    }

    @Override
    public void returned(int pid) throws IOException {
        connection.send(new AgentProtocol.Returned(pid));
    }

    @Override
    public void blocked(int pid, int tid, long savedMask) throws IOException {
        connection.send(new BlockedThread(pid, tid, savedMask));
    }

    @Override
    public void unblocked(int pid, int tid) throws IOException {
        connection.send(new AgentProtocol.Unblocked(pid, tid));
    }

    /** Whether the agent, once connected, has died: what it was doing may or may not have happened. */
    @Override
    public boolean gone() {
        return connection.gone();
    }

    /** The end of the dump's exit hook; the agent then watches alone. Without a single call made, it never ran. */
    @Override
    public void done() throws IOException {
        connection.done();
    }
}

package dev.criugpu.cuda.agent;

import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.state.CudaState;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Every line of the agent's protocol reads back as it was written, and each driver call goes through its {@code Op}. */
class AgentProtocolTest {
    static final GpuPair PAIR = new GpuPair(GpuUuid.parse("GPU-00000000-0000-0000-0000-000000000001"),
            GpuUuid.parse("GPU-00000000-0000-0000-0000-000000000002"));

    @Test
    void criusLinesRoundTrip() {
        for (AgentProtocol.ToAgent m : List.of(new AgentProtocol.ArgsLine(new CudaAgent.Args(1, 2, "cli", 3, 4).toArgv()),
                new AgentProtocol.LogLine(), new AgentProtocol.Call(7, "lock", 42, "100"), new AgentProtocol.Call(8, "state", 42, null),
                new WatchedTask(42, 99, CudaState.LOCKED), new AgentProtocol.Returned(42), new BlockedThread(42, 43, 0xfffffffffffffffeL),
                new AgentProtocol.Unblocked(42, 43), new AgentProtocol.Done())) {
            assertEquals(m, AgentProtocol.toAgent(AgentProtocol.encode(m)), AgentProtocol.encode(m));
        }
    }

    @Test
    void theAgentsLinesRoundTrip() {
        for (AgentProtocol.ToCriu m : List.of(new AgentProtocol.Ready("driver", 13000, true, 77, "CUDA driver API 13000 (libcuda.so.1)"),
                new AgentProtocol.Unusable("no CUDA backend: none"), new AgentProtocol.Ok(3, "running"), new AgentProtocol.Ok(4, null),
                new AgentProtocol.Err(5, 401, "not now"))) {
            assertEquals(m, AgentProtocol.toCriu(AgentProtocol.encode(m)), AgentProtocol.encode(m));
        }
    }

    /** The ready line names its fields; the description, last, keeps its spaces and an "=" of its own. */
    @Test
    void theReadyLineNamesItsFields() {
        var r = new AgentProtocol.Ready("cli", 0, false, 12, "cuda-checkpoint at /usr/bin/cuda-checkpoint a=b");
        assertEquals("ready name=cli api=0 remap=0 pid=12 description=cuda-checkpoint at /usr/bin/cuda-checkpoint a=b",
                AgentProtocol.encode(r));
        assertThrows(IllegalArgumentException.class, () -> AgentProtocol.toCriu("ready cli 0 0 12 cuda-checkpoint"));
        assertThrows(IllegalArgumentException.class, () -> AgentProtocol.toCriu("ready api=0 name=cli remap=0 pid=12 description=x"));
    }

    @Test
    void aMessageWithLineBreaksStaysOneLine() {
        assertEquals("err 1 401 a b c d", AgentProtocol.encode(new AgentProtocol.Err(1, 401, "a\r\nb\rc\nd")));
        assertEquals("unusable a b", AgentProtocol.encode(new AgentProtocol.Unusable("a\nb")));
    }

    @Test
    void malformedLinesAreRefused() {
        for (String line : List.of("", "task 1 2", "task 1 2 nonsense", "returned", "returned x", "log /tmp/x", "done now",
                "call 1 lock", "blocked 1 2", "unblocked 1", "hello")) {
            assertThrows(IllegalArgumentException.class, () -> AgentProtocol.toAgent(line), line);
        }
        for (String line : List.of("", "ok", "ok x", "err 1", "ready", "hello")) {
            assertThrows(IllegalArgumentException.class, () -> AgentProtocol.toCriu(line), line);
        }
    }

    /** Each call as criu's side writes it, served by the agent on a backend that records it, and its reply read back. */
    @Test
    void everyCallGoesThroughItsOp() throws CudaCallException {
        Recorder b = new Recorder();
        assertEquals(OptionalInt.of(43), roundTrip(AgentOp.RESTORE_TID, 42, null, b));
        assertEquals(CudaState.CHECKPOINTED, roundTrip(AgentOp.STATE, 42, null, b));
        assertNull(roundTrip(AgentOp.LOCK, 42, 100, b));
        assertNull(roundTrip(AgentOp.CHECKPOINT, 42, null, b));
        assertNull(roundTrip(AgentOp.RESTORE, 42, List.of(PAIR), b));
        assertNull(roundTrip(AgentOp.RESTORE, 42, List.of(), b));
        assertNull(roundTrip(AgentOp.UNLOCK, 42, null, b));
        assertNull(roundTrip(AgentOp.PREPARE_RESTORE, 0, null, b));
        assertEquals(List.of("restoreThread 42", "state 42", "lock 42 100", "checkpoint 42", "restore 42 [" + PAIR + "]",
                "restore 42 []", "unlock 42", "prepareRestore"), b.calls);
        assertEquals(List.of("restore-tid", "state", "lock", "checkpoint", "restore", "unlock", "prepare-restore"),
                List.copyOf(AgentOp.all().keySet()));
        assertEquals(OptionalInt.empty(), AgentOp.RESTORE_TID.reply("none"));
        assertThrows(IllegalArgumentException.class, () -> AgentOp.STATE.reply("sleepy"));
        assertThrows(IllegalArgumentException.class, () -> AgentOp.named("format-disk"));
    }

    /** The wire as it was before the calls were declared once: the agent of the same build reads the same words. */
    @Test
    void theCallLinesKeepTheirWords() {
        assertEquals("call 5 lock 42 100", AgentProtocol.encode(AgentOp.LOCK.call(5, 42, 100)));
        assertEquals("call 6 restore 42 -", AgentProtocol.encode(AgentOp.RESTORE.call(6, 42, List.of())));
        assertEquals("call 7 restore 42 " + PAIR, AgentProtocol.encode(AgentOp.RESTORE.call(7, 42, List.of(PAIR))));
        assertEquals("call 8 prepare-restore 0", AgentProtocol.encode(AgentOp.PREPARE_RESTORE.call(8, 0, null)));
    }

    private static <A, R> R roundTrip(AgentOp<A, R> op, int pid, A arg, CudaBackend backend) throws CudaCallException {
        var call = (AgentProtocol.Call) AgentProtocol.toAgent(AgentProtocol.encode(op.call(1, pid, arg)));
        String value = AgentOp.named(call.op()).serve(backend, call.pid(), call.arg());
        var ok = (AgentProtocol.Ok) AgentProtocol.toCriu(AgentProtocol.encode(new AgentProtocol.Ok(call.id(), value)));
        return op.reply(ok.value());
    }

    private static final class Recorder implements CudaBackend {
        final List<String> calls = new ArrayList<>();

        @Override
        public String describe() {
            return "recorder";
        }

        @Override
        public String name() {
            return "recorder";
        }

        @Override
        public boolean supportsGpuRemap() {
            return true;
        }

        @Override
        public OptionalInt restoreThread(int pid) {
            calls.add("restoreThread " + pid);
            return OptionalInt.of(pid + 1);
        }

        @Override
        public CudaState state(int pid) {
            calls.add("state " + pid);
            return CudaState.CHECKPOINTED;
        }

        @Override
        public void lock(int pid, int timeoutMs) {
            calls.add("lock " + pid + " " + timeoutMs);
        }

        @Override
        public void checkpoint(int pid) {
            calls.add("checkpoint " + pid);
        }

        @Override
        public void restore(int pid, List<GpuPair> pairs) {
            calls.add("restore " + pid + " " + pairs);
        }

        @Override
        public void unlock(int pid) {
            calls.add("unlock " + pid);
        }

        @Override
        public void prepareRestore() {
            calls.add("prepareRestore");
        }
    }
}

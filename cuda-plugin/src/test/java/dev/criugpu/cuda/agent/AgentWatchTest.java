package dev.criugpu.cuda.agent;

import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.bindings.cuda_h;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.api.sys.ProcStat;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.sys.RestoreThreadsTest;
import dev.criugpu.api.bindings.libc_h;
import java.lang.foreign.Arena;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The agent's watch against real processes standing for criu and the dumped tasks, and a driver in memory: what it
 * does when criu dies at each point of a dump, and that it does nothing while criu lives. The agent's own loop
 * ({@link AgentServer#run}) drives it, with criu's lines fed as the agent reads them.
 */
class AgentWatchTest {
    @TempDir
    Path dir;
    final List<Process> started = new ArrayList<>();
    final Driver driver = new Driver();
    final ByteArrayOutputStream logBytes = new ByteArrayOutputStream();
    dev.criugpu.api.HelperProcess toAgent;

    Process sleeper() throws IOException {
        Process p = new ProcessBuilder("sleep", "600").start();
        started.add(p);
        return p;
    }

    @AfterEach
    void cleanUp() throws InterruptedException {
        for (Process p : started) p.destroyForcibly().waitFor();
    }

    static long startOf(Process p) {
        return ProcStat.of(p.pid()).orElseThrow().startTime();
    }

    /** An agent watching {@code criu}, running on its own thread, fed criu's lines through a socket pair. */
    CompletableFuture<Integer> watch(Process criu, long settleMs) throws IOException {
        var pair = SocketPair.open();
        toAgent = pair.criuSide();
        AgentWatch w = new AgentWatch(criu.pid(), startOf(criu), settleMs, 20_000,
                new PrintStream(logBytes, true, StandardCharsets.UTF_8));
        AgentServer agent = new AgentServer(pair.agentSide(), w, driver);
        return CompletableFuture.supplyAsync(agent::run);
    }

    /** criu's death closes its end of the connection. */
    void criuDies(Process criu) throws Exception {
        criu.destroyForcibly().waitFor();
        toAgent.close();
    }

    void tell(String line) throws IOException {
        toAgent.writeLine(line);
    }

    void tell(AgentProtocol.ToAgent message) throws IOException {
        tell(AgentProtocol.encode(message));
    }

    void awaitLog(String text) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!log().contains(text)) {
            assertTrue(System.nanoTime() < deadline, "the agent never logged '" + text + "': " + log());
            Thread.sleep(10);
        }
    }

    String log() {
        return logBytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void criuKilledAfterTheCheckpointLeavesEveryLiveTaskRunningAgain() throws Exception {
        Process criu = sleeper(), a = sleeper(), b = sleeper(), killed = sleeper();
        var w = watch(criu, 0);
        for (Process t : List.of(a, b, killed)) {
            tell(new WatchedTask((int) t.pid(), startOf(t), CudaState.RUNNING));
            driver.states.put((int) t.pid(), CudaState.CHECKPOINTED);
        }
        killed.destroyForcibly().waitFor();
        criuDies(criu);
        assertEquals(0, w.get(30, TimeUnit.SECONDS));

        assertEquals(CudaState.RUNNING, driver.states.get((int) a.pid()));
        assertEquals(CudaState.RUNNING, driver.states.get((int) b.pid()));
        assertEquals(CudaState.CHECKPOINTED, driver.states.get((int) killed.pid()), "a dead task is left alone");
        assertTrue(log().contains("pid " + a.pid() + ": outlived criu; checkpointed -> running via [restore, unlock]"), log());
        assertTrue(log().contains("pid " + killed.pid() + ": ended with the dump; nothing to return"), log());
        assertTrue(log().contains("before its exit hook ran"), log());
    }

    @Test
    void aLockStillRunningWhenCriuDiedIsUndoneWhenItCompletes() throws Exception {
        Process criu = sleeper(), t = sleeper();
        int pid = (int) t.pid();
        var w = watch(criu, 3000);
        tell(new WatchedTask(pid, startOf(t), CudaState.RUNNING));
        driver.states.put(pid, CudaState.RUNNING);
        criuDies(criu);
        driver.lockLandsAfter(pid, 1000);
        assertEquals(0, w.get(30, TimeUnit.SECONDS));
        assertEquals(CudaState.RUNNING, driver.states.get(pid));
        assertTrue(log().contains("pid " + pid + ": outlived criu; running -> running (nothing to do)"), log());
        assertTrue(log().contains("pid " + pid + ": moved again by a driver call criu had started; back in running via [unlock]"), log());
    }

    @Test
    void aCheckpointStillRunningIsWaitedForThenUndone() throws Exception {
        Process criu = sleeper(), t = sleeper();
        int pid = (int) t.pid();
        var w = watch(criu, 0);
        tell(new WatchedTask(pid, startOf(t), CudaState.RUNNING));
        driver.states.put(pid, CudaState.LOCKED);
        driver.busyFor(pid, 1500); // the driver refuses other actions until the checkpoint criu started is over
        criuDies(criu);
        assertEquals(0, w.get(30, TimeUnit.SECONDS));
        assertEquals(CudaState.RUNNING, driver.states.get(pid));
        assertTrue(driver.refused > 0, "the agent met the running checkpoint and tried again");
    }

    @Test
    void nothingIsDoneWhileCriuLivesAndReturnedTasksAreLeftToCriu() throws Exception {
        Process criu = sleeper(), returned = sleeper(), guarded = sleeper();
        var w = watch(criu, 0);
        tell(new WatchedTask((int) returned.pid(), startOf(returned), CudaState.RUNNING));
        tell(new WatchedTask((int) guarded.pid(), startOf(guarded), CudaState.RUNNING));
        driver.states.put((int) returned.pid(), CudaState.RUNNING);
        driver.states.put((int) guarded.pid(), CudaState.CHECKPOINTED);
        tell("returned " + returned.pid());
        tell("done");
        toAgent.close();
        // criu still runs (a post-dump script resumed the tree, say): the agent waits and touches nothing
        awaitLog("criu's exit hook is over");
        assertTrue(!w.isDone() && driver.calls.isEmpty(), "acted while criu is alive: " + driver.calls);
        criu.destroyForcibly().waitFor();
        assertEquals(0, w.get(30, TimeUnit.SECONDS));
        assertEquals(CudaState.RUNNING, driver.states.get((int) guarded.pid()));
        assertTrue(driver.calls.stream().noneMatch(c -> c.endsWith(" " + returned.pid()) && !c.startsWith("state")), driver.calls.toString());
        assertTrue(log().contains("pid " + returned.pid() + ": criu returned it to running itself"), log());
        assertTrue(log().contains("after its exit hook"), log());
    }

    @Test
    void itLeavesAsSoonAsEveryTaskIsReturnedOrEndedWithCriuStillRunning() throws Exception {
        Process criu = sleeper(), a = sleeper(), b = sleeper();
        var w = watch(criu, 0);
        tell(new WatchedTask((int) a.pid(), startOf(a), CudaState.RUNNING));
        tell(new WatchedTask((int) b.pid(), startOf(b), CudaState.RUNNING));
        tell("returned " + a.pid());
        tell("done");
        b.destroyForcibly().waitFor();
        assertEquals(0, w.get(30, TimeUnit.SECONDS));
        assertTrue(driver.calls.isEmpty(), driver.calls.toString());
        assertTrue(log().contains("every task returned by itself or ended with the dump"), log());
    }

    /** criu, told to stop, left the task's restore thread with our signals blocked: once criu is gone, the mask is back. */
    @Test
    void aRestoreThreadLeftWithOurSignalsBlockedGetsItsMaskBackOnceCriuIsGone() throws Exception {
        Process criu = sleeper();
        int pid = RestoreThreadsTest.orphanSleeper();
        try (Arena arena = Arena.ofConfined()) {
            RestoreThreadsTest.setMaskFromOutside(pid, ~(1L << (libc_h.SIGTRAP - 1)), arena);
            var w = watch(criu, 0);
            tell(new WatchedTask(pid, ProcStat.of(pid).orElseThrow().startTime(), CudaState.RUNNING));
            driver.states.put(pid, CudaState.CHECKPOINTED);
            tell(new BlockedThread(pid, pid, 0));
            criuDies(criu);
            assertEquals(0, w.get(30, TimeUnit.SECONDS), log());
            assertTrue(log().contains("pid " + pid + ": restore thread " + pid + " has its signal mask 0 back"), log());
            assertEquals(0, RestoreThreadsTest.sigBlk(pid));
            assertEquals(CudaState.RUNNING, driver.states.get(pid));
        } finally {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    @Test
    void aPidReusedByAnotherProcessIsLeftAlone() throws Exception {
        Process criu = sleeper(), t = sleeper();
        int pid = (int) t.pid();
        var w = watch(criu, 0);
        tell(new WatchedTask(pid, startOf(t) + 1, CudaState.RUNNING));
        driver.states.put(pid, CudaState.CHECKPOINTED);
        criuDies(criu);
        assertEquals(0, w.get(30, TimeUnit.SECONDS));
        assertEquals(CudaState.CHECKPOINTED, driver.states.get(pid));
    }

    /** A driver's message with line breaks must not end the reply early: the next line would be taken for a reply. */
    @Test
    void anErrorTextWithLineBreaksStaysOneReply() throws Exception {
        Process criu = sleeper();
        watch(criu, 0);
        driver.states.put(4242, CudaState.RUNNING);
        driver.lockFailure = "first line\r\nsecond line\rthird\nfourth";
        tell("call 1 lock 4242 100");
        assertEquals("err 1 " + cuda_h.CUDA_ERROR_ILLEGAL_STATE + " first line second line third fourth", toAgent.readLine());
        tell("call 2 state 4242");
        assertEquals("ok 2 running", toAgent.readLine());
        criuDies(criu);
    }

    @Test
    void argumentsRoundTrip() {
        CudaAgent.Args a = new CudaAgent.Args(12, 34, "cli", 5, 6);
        assertEquals(12, CudaAgent.criuPid(CudaAgent.commandArgs(12).toArray(String[]::new)));
        assertEquals(a, CudaAgent.Args.parse(12, a.toArgv().toArray(String[]::new)));
        assertThrows(IllegalArgumentException.class, () -> new CudaAgent.Args(12, 34, "/tmp/x/run-me", 5, 6));
    }

    /** Nothing that names a program or a file is taken from criu's line (DESIGN rule 11), nor anything unknown. */
    @Test
    void aLineThatNamesAProgramOrAnythingUnknownIsRefused() {
        for (String line : List.of("--criu-start 34 --backend cli --cuda-checkpoint /tmp/x/run-me",
                "--criu-start 34 --backend /tmp/x/run-me", "--criu-start 34 --backend cli --log /tmp/x/made",
                "--criu-start 34 --backend cli --criu-start 35", "--criu-start 34")) {
            assertThrows(IllegalArgumentException.class, () -> CudaAgent.Args.parse(12, line.split(" ")), line);
        }
        assertThrows(IllegalArgumentException.class, () -> CudaAgent.criuPid(new String[] {"--socket", "/tmp/x/helper.sock",
                "--criu-pid", "12"}));
    }

    /** The driver as the agent meets it after criu's death: calls criu started may still land. */
    static final class Driver implements CudaBackend {
        final Map<Integer, CudaState> states = new java.util.concurrent.ConcurrentHashMap<>();
        final List<String> calls = java.util.Collections.synchronizedList(new ArrayList<>());
        final Map<Integer, Long> busyUntil = new HashMap<>();
        volatile int refused;

        void lockLandsAfter(int pid, long ms) {
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    Thread.sleep(ms); // the stand-in for the driver finishing criu's lock later
                } catch (InterruptedException ignored) {
                }
                states.put(pid, CudaState.LOCKED);
            });
        }

        synchronized void busyFor(int pid, long ms) {
            busyUntil.put(pid, System.nanoTime() + ms * 1_000_000);
        }

        volatile String lockFailure;

        private synchronized void act(int pid, String action, CudaState from, CudaState to) throws CudaCallException {
            calls.add(action + " " + pid);
            if (action.equals("lock") && lockFailure != null) throw new CudaCallException(cuda_h.CUDA_ERROR_ILLEGAL_STATE, lockFailure);
            Long until = busyUntil.get(pid);
            if (until != null && System.nanoTime() < until) {
                refused++;
                throw new CudaCallException(cuda_h.CUDA_ERROR_ILLEGAL_STATE, "busy");
            }
            if (until != null) {
                busyUntil.remove(pid);
                states.put(pid, CudaState.CHECKPOINTED);
                throw new CudaCallException(cuda_h.CUDA_ERROR_ILLEGAL_STATE, "checkpoint just finished");
            }
            if (states.get(pid) != from) throw new CudaCallException(cuda_h.CUDA_ERROR_ILLEGAL_STATE, action + " in " + states.get(pid));
            states.put(pid, to);
        }

        @Override public String describe() { return "agent's fake driver"; }
        @Override public String name() { return "driver"; }
        @Override public boolean supportsGpuRemap() { return true; }
        @Override public OptionalInt restoreThread(int pid) { return OptionalInt.of(pid); }

        @Override
        public CudaState state(int pid) {
            calls.add("state " + pid);
            return states.get(pid);
        }

        @Override public void lock(int pid, int timeoutMs) throws CudaCallException { act(pid, "lock", CudaState.RUNNING, CudaState.LOCKED); }
        @Override public void checkpoint(int pid) throws CudaCallException { act(pid, "checkpoint", CudaState.LOCKED, CudaState.CHECKPOINTED); }
        @Override public void restore(int pid, List<GpuPair> pairs) throws CudaCallException { act(pid, "restore", CudaState.CHECKPOINTED, CudaState.LOCKED); }
        @Override public void unlock(int pid) throws CudaCallException { act(pid, "unlock", CudaState.LOCKED, CudaState.RUNNING); }
    }
}

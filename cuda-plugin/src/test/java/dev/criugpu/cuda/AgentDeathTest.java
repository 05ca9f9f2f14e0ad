package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.log.CriuLog;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.bindings.cuda_h;
import dev.criugpu.cuda.state.CudaState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CUDA agent dies at each point of a dump (criu 4.2's hook order, as in {@link DumpFlowTest}): whatever the point,
 * with {@code -R} or without, every task the dump touched ends in its state before the dump when criu leaves it alive
 * — through criu's own backend (here the same in-memory driver) once the agent is gone — or criu's exit says it must
 * fail, with one line naming the pid and what to run.
 */
class AgentDeathTest {
    /** Short, since a task whose call was under way when the agent died is watched for the lock time-out + 2 s. */
    static final int LOCK_TIMEOUT_MS = 100;

    @TempDir
    Path images;
    final FakeDriver.Events events = new FakeDriver.Events();
    final FakeThreads threads = new FakeThreads(events);
    final FakeDriver driver = new FakeDriver(events, threads);
    final FakeAgent agent = new FakeAgent(driver);
    final Tasks tasks = new Tasks();
    Supplier<BackendSelection> fallback = () -> new BackendSelection(driver, "criu's own driver", List.of());
    /** The second agent: what it is told goes to the event record as "second ...". */
    final RecordingAgentLink second = new RecordingAgentLink(events, "second ");
    TestServices services;

    @BeforeEach
    void setUp() {
        services = new TestServices(Stage.DUMP, images, InventoryClaim.NONE);
        CriuLog.register("dev.criugpu.cuda", services);
    }

    @AfterEach
    void tearDown() throws InterruptedException {
        tasks.close();
    }

    DumpSession session() {
        return session(true);
    }

    DumpSession session(boolean parallel) {
        return new DumpSession(services, new CudaDeps(agent, threads, agent, () -> fallback.get(), () -> second), LOCK_TIMEOUT_MS, List.of(), parallel);
    }

    /** PAUSE_DEVICES for each pid (criu then stops it), then CHECKPOINT_DEVICES for each; the first failure. */
    CriuException dump(DumpSession s, List<Integer> pids) {
        try {
            for (int p : pids) {
                s.pause(p);
                threads.hold(p);
            }
            for (int p : pids) s.checkpoint(p);
            return null;
        } catch (CriuException e) {
            return e;
        }
    }

    int cudaTask() throws Exception {
        int pid = tasks.start();
        driver.cuda(pid, CudaState.RUNNING);
        return pid;
    }

    /** The dump failed at the agent's death, naming one of {@code pids} (checkpoints run concurrently: any may see it first). */
    void assertAgentDeathNamed(CriuException e, int... pids) {
        assertNotNull(e, "the dump went on without the agent");
        assertTrue(java.util.Arrays.stream(pids).anyMatch(pid -> e.getMessage().startsWith("pid " + pid + ": "))
                && e.getMessage().contains("the CUDA agent died"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }

    void assertRunningAndReleased(int... pids) {
        for (int p : pids) assertEquals(CudaState.RUNNING, driver.state(p, true), "pid " + p + ": " + events.about(p));
        assertTrue(threads.stillRunning().isEmpty(), "restore threads left running: " + threads.stillRunning());
        assertTrue(services.errors().isEmpty(), services.errors().toString());
    }

    @Test
    void diedAfterTheLock() throws Exception {
        for (boolean leaveRunning : List.of(false, true)) {
            int a = cudaTask();
            agent.dieAfter("lock", a);
            DumpSession s = session();
            assertAgentDeathNamed(dump(s, List.of(a)), a);
            assertFalse(s.exit(-1, leaveRunning), "criu fails the dump anyway");
            assertRunningAndReleased(a);
            assertTrue(events.about(a).contains("unlock " + a), events.about(a).toString());
            agent.revive();
        }
    }

    @Test
    void diedDuringTheLockWhichLandedAnyway() throws Exception {
        int a = cudaTask();
        agent.dieDuring("lock", a);
        DumpSession s = session();
        CriuException e = dump(s, List.of(a));
        assertAgentDeathNamed(e, a);
        assertEquals(CudaState.LOCKED, driver.state(a, true), "the lock landed though its answer was lost");
        assertFalse(s.exit(-1, false));
        assertRunningAndReleased(a);
    }

    @Test
    void diedDuringTheCheckpoint() throws Exception {
        for (boolean leaveRunning : List.of(false, true)) {
            int a = cudaTask(), b = cudaTask();
            agent.dieDuring("checkpoint", b);
            // one checkpoint after the other: a's is answered before the agent dies in b's, whose pid the line names
            // (concurrent, a's call may meet the dead agent too, and its own error line is then right as well)
            DumpSession s = session(false);
            assertAgentDeathNamed(dump(s, List.of(a, b)), b);
            assertFalse(s.exit(-1, leaveRunning));
            assertRunningAndReleased(a, b);
            agent.revive();
        }
    }

    @Test
    void diedDuringThePageDumpOfADumpThatLeavesTheTreeRunning() throws Exception {
        int a = cudaTask(), b = cudaTask();
        DumpSession s = session();
        assertEquals(null, dump(s, List.of(a, b)));
        agent.die();
        assertFalse(s.exit(0, true), "every task came back: criu may exit 0");
        assertRunningAndReleased(a, b);
        List<String> e = events.all();
        assertTrue(e.indexOf("restore " + a) > e.indexOf("agent-died") && e.indexOf("unlock " + a) > e.indexOf("restore " + a), e.toString());
    }

    @Test
    void diedDuringThePageDumpOfADumpThatKillsTheTree() throws Exception {
        int a = cudaTask();
        DumpSession s = session();
        assertEquals(null, dump(s, List.of(a)));
        agent.die();
        assertFalse(s.exit(0, false));
        assertEquals(CudaState.CHECKPOINTED, driver.state(a, true), "criu kills it: the dump is complete");
        List<String> e = events.all();
        assertTrue(e.contains("second watch running " + a) && e.getLast().equals("second agent-done"),
                "a second agent watches it in case criu resumes the tree: " + e);
    }

    @Test
    void noSecondAgentIsNamedWithTheCommandForTheCaseCriuResumesTheTree() throws Exception {
        int a = cudaTask();
        second.broken = "cannot start java";
        DumpSession s = session();
        assertEquals(null, dump(s, List.of(a)));
        agent.die();
        assertFalse(s.exit(0, false));
        assertTrue(services.log.stream().anyMatch(l -> l.startsWith("WARN") && l.contains("cannot start java")
                && l.contains("`criu-gpu cuda --toggle --pid " + a + "`")), services.log.toString());
    }

    @Test
    void diedAfterTheCheckpointOfADumpThatFailsLater() throws Exception {
        int a = cudaTask();
        DumpSession s = session();
        assertEquals(null, dump(s, List.of(a)));
        agent.die();
        assertFalse(s.exit(-1, false)); // criu's page dump failed, say
        assertRunningAndReleased(a);
    }

    @Test
    void diedWhileCriusExitReturnedTheTasks() throws Exception {
        int a = cudaTask();
        agent.dieDuring("restore", a);
        DumpSession s = session();
        assertEquals(null, dump(s, List.of(a)));
        assertFalse(s.exit(0, true));
        assertRunningAndReleased(a);
    }

    @Test
    void diedAfterCriusExit() throws Exception {
        int a = cudaTask();
        DumpSession s = session();
        assertEquals(null, dump(s, List.of(a)));
        assertFalse(s.exit(0, true));
        agent.die();
        assertRunningAndReleased(a);
    }

    @Test
    void aTaskThatCannotBeReturnedWhileTheTreeLivesFailsCriuWithOneLine() throws Exception {
        int a = cudaTask();
        fallback = () -> new BackendSelection(null, "no backend: libcuda.so.1 not found", List.of());
        DumpSession s = session();
        assertEquals(null, dump(s, List.of(a)));
        agent.die();
        assertTrue(s.exit(0, true), "criu would exit 0 with pid " + a + " checkpointed");
        assertEquals(CudaState.CHECKPOINTED, driver.state(a, true));
        List<String> errors = services.errors();
        assertEquals(1, errors.size(), errors.toString());
        assertTrue(errors.getFirst().contains("pid " + a + ": left checkpointed, not running as before the dump")
                && errors.getFirst().contains("no backend: libcuda.so.1 not found")
                && errors.getFirst().endsWith("run `criu-gpu cuda --toggle --pid " + a + "`"), errors.getFirst());
        assertTrue(threads.stillRunning().isEmpty());
    }

    @Test
    void aDriverThatRefusesTheReturnAfterTheAgentDiedIsNamedWithTheCommand() throws Exception {
        int a = cudaTask();
        DumpSession s = session();
        assertEquals(null, dump(s, List.of(a)));
        driver.fail(a, "unlock", cuda_h.CUDA_ERROR_OUT_OF_MEMORY, true);
        agent.die();
        s.fallbackGiveUpMs(500);
        assertTrue(s.exit(0, true));
        assertEquals(CudaState.LOCKED, driver.state(a, true));
        List<String> errors = services.errors();
        assertEquals(1, errors.size(), errors.toString());
        assertTrue(errors.getFirst().contains("pid " + a + ": left locked") && errors.getFirst().contains("planted unlock failure")
                && errors.getFirst().endsWith("run `criu-gpu cuda --action unlock --pid " + a + "`"), errors.getFirst());
    }
}

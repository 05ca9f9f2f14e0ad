package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.log.CriuLog;
import dev.criugpu.cuda.bindings.cuda_h;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.image.CudaTaskImages;
import dev.criugpu.cuda.state.CudaState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dump hook flow as criu 4.2 issues it (PAUSE_DEVICES per task while the tree runs, CHECKPOINT_DEVICES per
 * task once frozen, then the plugin exit with the dump's result), against a driver kept in memory: the state of every
 * task at the end, what the agent was told and when, and that every woken restore thread was stopped again.
 */
class DumpFlowTest {
    @TempDir
    Path images;
    final FakeDriver.Events events = new FakeDriver.Events();
    final FakeThreads threads = new FakeThreads(events);
    final FakeDriver driver = new FakeDriver(events, threads);
    final RecordingAgentLink agentLink = new RecordingAgentLink(events);
    final Tasks tasks = new Tasks();
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

    DumpSession session(boolean parallel) {
        return new DumpSession(services, new CudaDeps(driver, threads, agentLink,
                () -> { throw new AssertionError("no fallback while the agent lives"); },
                () -> { throw new AssertionError("no second agent while the first lives"); }), 10_000, List.of(), parallel);
    }

    /**
     * Runs PAUSE_DEVICES then CHECKPOINT_DEVICES for every pid, as criu does (it stops each task right after its
     * PAUSE_DEVICES); returns the first failure, if any.
     */
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

    @Test
    void aDumpThatKillsTheTreeLeavesEveryCudaTaskCheckpointedAndRecorded() throws Exception {
        int a = tasks.start(), b = tasks.start(), cpu = tasks.start();
        driver.cuda(a, CudaState.RUNNING).cuda(b, CudaState.RUNNING);
        DumpSession s = session(true);
        assertEquals(null, dump(s, List.of(a, cpu, b)));
        s.exit(0, false);

        assertEquals(CudaState.CHECKPOINTED, driver.state(a, true));
        assertEquals(CudaState.CHECKPOINTED, driver.state(b, true));
        assertEquals(List.of("restore-tid " + cpu), events.about(cpu), "a task without CUDA costs one query");
        Map<Integer, CudaTaskEntry> records = CudaTaskImages.readAll(images).stream()
                .collect(Collectors.toMap(CudaTaskEntry::getPid, e -> e));
        assertEquals(java.util.Set.of(a, b), records.keySet());
        assertEquals(CudaState.RUNNING.value, records.get(a).getInitialState());
        for (int p : List.of(a, b)) {
            List<String> e = events.about(p);
            assertTrue(e.contains("watch running " + p) && e.contains("lock " + p)
                    && e.indexOf("watch running " + p) < e.indexOf("lock " + p), "watched before its lock: " + e);
            assertTrue(!e.contains("returned " + p), "criu will kill it; the agent keeps it: " + e);
        }
        assertEquals("agent-done", events.all().getLast());
        assertTrue(threads.stillRunning().isEmpty());
        assertEquals(1, services.inventoryAdds);
        assertTrue(services.errors().isEmpty(), services.errors().toString());
    }

    @Test
    void aLockTimeoutAbortsTheDumpAndLeavesEveryTaskRunning() throws Exception {
        int a = tasks.start(), b = tasks.start();
        driver.cuda(a, CudaState.RUNNING).cuda(b, CudaState.RUNNING).fail(b, "lock", cuda_h.CUDA_ERROR_TIMEOUT, true);
        DumpSession s = session(true);
        CriuException e = dump(s, List.of(a, b));
        assertEquals(Errno.ETIMEDOUT, e.errno());
        assertTrue(e.getMessage().startsWith("pid " + b + ": CUDA lock did not finish within 10000 ms"), e.getMessage());
        s.exit(-1, false);

        assertEquals(CudaState.RUNNING, driver.state(a, true));
        assertEquals(CudaState.RUNNING, driver.state(b, true));
        assertTrue(events.about(a).contains("returned " + a), events.about(a).toString());
        assertTrue(events.about(b).contains("returned " + b), events.about(b).toString());
        assertTrue(threads.stillRunning().isEmpty());
    }

    @Test
    void aCheckpointFailingForOneTaskOfThreeReturnsAllThree() throws Exception {
        int a = tasks.start(), b = tasks.start(), c = tasks.start();
        for (int p : List.of(a, b, c)) driver.cuda(p, CudaState.RUNNING);
        driver.fail(b, "checkpoint", cuda_h.CUDA_ERROR_OUT_OF_MEMORY, false);
        DumpSession s = session(true);
        CriuException e = dump(s, List.of(a, b, c));
        assertTrue(e.getMessage().startsWith("pid " + b + ": CUDA checkpoint failed"), e.getMessage());
        s.exit(-1, false);

        for (int p : List.of(a, b, c)) {
            assertEquals(CudaState.RUNNING, driver.state(p, true), "pid " + p);
            assertTrue(events.about(p).contains("returned " + p));
        }
        assertTrue(threads.stillRunning().isEmpty());
    }

    @Test
    void leaveRunningReturnsTheTasksInsideCriuAndReleasesTheAgent() throws Exception {
        int a = tasks.start();
        driver.cuda(a, CudaState.RUNNING);
        DumpSession s = session(false);
        assertEquals(null, dump(s, List.of(a)));
        s.exit(0, true);

        assertEquals(CudaState.RUNNING, driver.state(a, true));
        List<String> e = events.about(a);
        assertTrue(e.contains("restore " + a) && e.indexOf("restore " + a) < e.indexOf("unlock " + a)
                && e.indexOf("unlock " + a) < e.indexOf("returned " + a), e.toString());
        assertEquals("agent-done", events.all().getLast());
    }

    @Test
    void tasksTheUserHadLockedOrCheckpointedAreLeftSo() throws Exception {
        int locked = tasks.start(), checkpointed = tasks.start();
        driver.cuda(locked, CudaState.LOCKED).cuda(checkpointed, CudaState.CHECKPOINTED);
        DumpSession s = session(true);
        assertEquals(null, dump(s, List.of(locked, checkpointed)));
        assertEquals(CudaState.CHECKPOINTED, driver.state(locked, true));
        assertTrue(!events.about(locked).contains("lock " + locked), "it was locked already");
        assertTrue(events.about(checkpointed).stream().noneMatch(x -> x.startsWith("watch ") || x.startsWith("checkpoint ")),
                "nothing is done to a checkpointed task: " + events.about(checkpointed));
        s.exit(-1, false);

        assertEquals(CudaState.LOCKED, driver.state(locked, true), "back to locked, not further");
        assertEquals(CudaState.CHECKPOINTED, driver.state(checkpointed, true));
        Map<Integer, Integer> initial = CudaTaskImages.readAll(images).stream()
                .collect(Collectors.toMap(CudaTaskEntry::getPid, CudaTaskEntry::getInitialState));
        assertEquals(Map.of(locked, CudaState.LOCKED.value, checkpointed, CudaState.CHECKPOINTED.value), initial);
    }

    @Test
    void aTaskThatCannotBeWatchedIsNotTouched() throws Exception {
        int a = tasks.start();
        driver.cuda(a, CudaState.RUNNING);
        agentLink.broken = "the CUDA agent ended";
        DumpSession s = session(true);
        CriuException e = assertThrows(CriuException.class, () -> s.pause(a));
        assertTrue(e.getMessage().contains("cannot hand it to the CUDA agent (the CUDA agent ended)"), e.getMessage());
        assertEquals(CudaState.RUNNING, driver.state(a, true));
        assertTrue(!events.about(a).contains("lock " + a));
    }

    @Test
    void anEarlierDumpsRecordsAndAgentLogAreRemoved() throws Exception {
        java.nio.file.Files.writeString(images.resolve("cuda-plugin-99999.img"), "old");
        java.nio.file.Files.writeString(DumpSession.agentLog(images), "old");
        DumpSession.removeStaleFiles(services);
        assertTrue(CudaTaskImages.files(images).isEmpty());
        assertTrue(!java.nio.file.Files.exists(DumpSession.agentLog(images)));
    }
}

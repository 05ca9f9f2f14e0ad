package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.log.CriuLog;
import dev.criugpu.cuda.bindings.cuda_h;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.image.CudaGpuEntry;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.state.CudaState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The restore hook flow as criu 4.2 issues it: RESUME_DEVICES_LATE once per task it resumes, in pstree order, with
 * every task stopped. Images of ours (records), of upstream's plugin (no records), and of both kinds of task in one
 * tree; a device restore that fails after the fork kills its task.
 */
class RestoreFlowTest {
    @TempDir
    Path images;
    final FakeDriver.Events events = new FakeDriver.Events();
    final FakeThreads threads = new FakeThreads(events);
    final FakeDriver driver = new FakeDriver(events, threads);
    final Tasks tasks = new Tasks();
    TestServices services;

    @BeforeEach
    void setUp() {
        services = new TestServices(Stage.RESTORE, images, InventoryClaim.LISTED);
        CriuLog.register("dev.criugpu.cuda", services);
    }

    @AfterEach
    void tearDown() throws InterruptedException {
        tasks.close();
    }

    /** A restore session; criu has every task of the tree stopped when RESUME_DEVICES_LATE comes. */
    RestoreSession session(List<CudaTaskEntry> records, Set<Integer> resumed) {
        for (int p : resumed) threads.hold(p);
        return new RestoreSession(CudaDeps.inCriu(driver, threads),
                records, resumed, true, List.of(), List.of(), Map.of(), true);
    }

    static CudaTaskEntry record(int pid, CudaState initial) {
        return CudaTaskEntry.newBuilder().setPid(pid).setInitialState(initial.value).setBackend("driver").build();
    }

    /** RESUME_DEVICES_LATE for every pid in order; the answers, or the first failure's message. */
    static List<Object> resumeAll(RestoreSession s, List<Integer> pids) {
        List<Object> answers = new ArrayList<>();
        for (int p : pids) {
            try {
                answers.add(s.resume(p));
            } catch (CriuException e) {
                answers.add(e.getMessage());
            }
        }
        return answers;
    }

    @Test
    void anImageOfUpstreamsPluginIsRestoredByAskingTheDriver() throws Exception {
        int a = tasks.start(), cpu = tasks.start(), b = tasks.start(), locked = tasks.start();
        driver.cuda(a, CudaState.CHECKPOINTED).cuda(b, CudaState.CHECKPOINTED).cuda(locked, CudaState.LOCKED);
        List<Integer> tree = List.of(a, cpu, b, locked);
        RestoreSession s = session(List.of(), new LinkedHashSet<>(tree));

        assertEquals(List.of(0, Errno.NOT_SUPPORTED, 0, 0), resumeAll(s, tree));
        for (int p : List.of(a, b, locked)) assertEquals(CudaState.RUNNING, driver.state(p, true), "pid " + p);
        assertEquals(List.of("restore-tid " + cpu), events.about(cpu), "a task without CUDA costs one query");
        assertTrue(!events.about(locked).contains("restore " + locked), "a locked task is only unlocked");
        assertTrue(threads.stillRunning().isEmpty());
        assertTrue(services.errors().isEmpty(), services.errors().toString());
    }

    @Test
    void theDriversWorkIsJoinedAtTheLastTaskCriuResumes() throws Exception {
        int a = tasks.start(), b = tasks.start(), zombie = 999_999;
        driver.cuda(a, CudaState.CHECKPOINTED).cuda(b, CudaState.CHECKPOINTED);
        // the zombie is in pstree.img but not among the tasks criu resumes: nothing may wait for it
        RestoreSession s = session(List.of(), new LinkedHashSet<>(List.of(a, b)));
        s.resume(a);
        assertTrue(threads.stillRunning().contains(a), "a's restore runs while criu goes on");
        s.resume(b);
        assertTrue(threads.stillRunning().isEmpty(), "every restore thread stopped before criu detaches");
        assertEquals(Errno.NOT_SUPPORTED, s.resume(zombie));
    }

    @Test
    void aTreeWithAndWithoutRecordsIsRestoredWhole() throws Exception {
        int recorded = tasks.start(), unrecorded = tasks.start(), userCheckpointed = tasks.start();
        driver.cuda(recorded, CudaState.CHECKPOINTED).cuda(unrecorded, CudaState.CHECKPOINTED)
                .cuda(userCheckpointed, CudaState.CHECKPOINTED);
        RestoreSession s = session(List.of(record(recorded, CudaState.RUNNING), record(userCheckpointed, CudaState.CHECKPOINTED)),
                new LinkedHashSet<>(List.of(recorded, unrecorded, userCheckpointed)));
        assertEquals(List.of(0, 0, 0), resumeAll(s, List.of(recorded, unrecorded, userCheckpointed)));
        assertEquals(CudaState.RUNNING, driver.state(recorded, true));
        assertEquals(CudaState.RUNNING, driver.state(unrecorded, true));
        assertEquals(CudaState.CHECKPOINTED, driver.state(userCheckpointed, true), "its record says the user had it so");
        assertTrue(threads.stillRunning().isEmpty());
    }

    @Test
    void aRecordOfATaskLockedBeforeTheDumpLeavesItLocked() throws Exception {
        int p = tasks.start();
        driver.cuda(p, CudaState.CHECKPOINTED);
        RestoreSession s = session(List.of(record(p, CudaState.LOCKED)), new LinkedHashSet<>(List.of(p)));
        assertEquals(List.of(0), resumeAll(s, List.of(p)));
        assertEquals(CudaState.LOCKED, driver.state(p, true));
    }

    @Test
    void aTaskWhoseRestoreFailsAfterTheForkIsKilledAndNamed() throws Exception {
        int ok = tasks.start(), bad = tasks.start();
        driver.cuda(ok, CudaState.CHECKPOINTED).cuda(bad, CudaState.CHECKPOINTED)
                .fail(bad, "restore", cuda_h.CUDA_ERROR_OUT_OF_MEMORY, true);
        RestoreSession s = session(List.of(record(ok, CudaState.RUNNING)), new LinkedHashSet<>(List.of(ok, bad)));
        List<Object> answers = resumeAll(s, List.of(ok, bad));

        assertEquals(0, answers.getFirst());
        String line = (String) answers.getLast();
        assertTrue(line.startsWith("pid " + bad + ": CUDA restore failed: planted restore failure")
                && line.contains("killed it so that it cannot run without its GPU state"), line);
        assertTrue(tasks.killed(bad), "pid " + bad + " still runs with its CUDA state missing");
        assertTrue(tasks.alive(ok));
        assertEquals(CudaState.RUNNING, driver.state(ok, true));
        assertTrue(threads.stillRunning().isEmpty());
    }

    /**
     * A driver may refuse to move a task onto other GPUs where it moves one elsewhere (measured inside a container,
     * driver 580: CUDA error 1): the line says which GPUs the restore was moving, by UUID.
     */
    @Test
    void aFailedRestoreOntoOtherGpusNamesTheGpus() throws Exception {
        GpuInfo dumped = new GpuInfo(GpuUuid.parse("GPU-11111111-2222-3333-4444-555555555555"), 1, "NVIDIA H200", "");
        GpuInfo here = new GpuInfo(GpuUuid.parse("GPU-66666666-7777-8888-9999-000000000000"), 0, "NVIDIA H200", "");
        int p = tasks.start();
        driver.cuda(p, CudaState.CHECKPOINTED).fail(p, "restore", cuda_h.CUDA_ERROR_INVALID_VALUE, true);
        threads.hold(p);
        CudaTaskEntry rec = record(p, CudaState.RUNNING).toBuilder().addGpus(CudaGpuEntry.newBuilder()
                .setUuid(dumped.uuid().text()).setModel(dumped.model()).setMinor(dumped.minor()).setUsedMib(64)).build();
        RestoreSession s = new RestoreSession(CudaDeps.inCriu(driver, threads), List.of(rec), Set.of(p), true,
                List.of(here), List.of(here), Map.of(), true, java.util.Optional::empty);

        String line = (String) resumeAll(s, List.of(p)).getFirst();
        assertTrue(line.startsWith("pid " + p + ": CUDA restore failed moving its GPUs " + dumped.uuid().text()
                + " (dump) to " + here.uuid().text() + ": planted restore failure"), line);
        assertTrue(tasks.killed(p));
    }

    @Test
    void aRestoreThreadMissingAfterTheForkKillsTheTask() throws Exception {
        int p = tasks.start();
        // a record says it had CUDA state, but the restored process has none: its GPU memory is gone
        RestoreSession s = session(List.of(record(p, CudaState.RUNNING)), new LinkedHashSet<>(List.of(p)));
        CriuException e = assertThrows(CriuException.class, () -> s.resume(p));
        assertTrue(e.getMessage().startsWith("pid " + p + ": ") && e.getMessage().contains("restored without a CUDA restore thread"),
                e.getMessage());
        assertTrue(tasks.killed(p));
    }

    @Test
    void recordsOfTasksThisRestoreDoesNotResumeAreIgnored() throws Exception {
        int p = tasks.start();
        driver.cuda(p, CudaState.CHECKPOINTED);
        RestoreSession s = session(List.of(record(p, CudaState.RUNNING), record(4_000_000, CudaState.RUNNING)),
                new LinkedHashSet<>(List.of(p)));
        assertEquals(List.of(0), resumeAll(s, List.of(p)));
        assertEquals(CudaState.RUNNING, driver.state(p, true));
        assertTrue(services.log.stream().anyMatch(l -> l.contains("cuda-plugin-4000000.img belongs to no task")), services.log.toString());
    }
}

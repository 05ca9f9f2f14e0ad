package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.AmdgpuPlugin;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.SimulatedCriu;
import dev.criugpu.amdgpu.testing.SimulatedExecutor;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess;
import dev.criugpu.amdgpu.testing.SimulatedHost;
import dev.criugpu.amdgpu.testing.SysfsTree;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.LogLevel;
import dev.criugpu.api.Stage;
import dev.criugpu.api.ThreadSignals;
import dev.criugpu.api.bindings.signal_h;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Acceptance 4 on the restore side: each failure gives one clear line and leaves no task running on paused
 * queues or wrong GPU memory. The restored task is a real forked process running the native executor (no JVM
 * in it), as criu's children do; the refill runs in this process, as in criu's main process.
 */
class RefillFailureTest {
    private static final int SIGKILL = 9;
    private static final int EBADF = 9;

    @TempDir
    Path dir;

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
    }

    private Path dumped() throws IOException {
        Path images = SimulatedGpuProcess.dump(dir, SimulatedGpuProcess.bos(new Random(7)), Map.of());
        KfdSimulator.reset(); // the restore host starts with a fresh KFD
        return images;
    }

    /** Restores in a forked task and resumes it; returns the log's error lines, checks the task was killed. */
    private List<String> restoreExpectingKill(Path images) {
        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = SimulatedGpuProcess.restorePlugin(dir, Map.of("KFD_MAX_BUFFER_SIZE", "1M"));
        assertEquals(0, plugin.init(Stage.RESTORE, criu), String.join("\n", criu.lines()));
        KfdSimulator.Task task = criu.spawnRestore(SimulatedGpuProcess.KFD_FILE);
        assertTrue(task.result() >= 0, "RESTORE_EXT_FILE in the task returned " + task.result());
        assertEquals(-5, plugin.resumeDevicesLate(task.pid()));
        assertEquals(SIGKILL, task.reap(false), "the task was killed, not resumed");
        plugin.exit(Stage.RESTORE, 0);
        assertEquals(0, KfdSimulator.drmLive(), "every libdrm object freed");
        List<String> errors = criu.lines(LogLevel.ERROR);
        assertTrue(errors.getLast().startsWith("pid " + task.pid() + ": GPU memory not restored; killed it so that it "
                + "cannot run without its GPU state (this fails the restore); "), errors.getLast());
        return errors;
    }

    @Test
    void failedSdmaSubmitKillsTheTaskAndNamesFileBoAndGpu() throws IOException {
        Path images = dumped();
        KfdSimulator.drmFault(129, 1, KfdSimulator.DrmFault.SUBMIT_FAILS); // GPU 0x1001 is renderD129 there
        List<String> errors = restoreExpectingKill(images);
        assertEquals(2, errors.size(), errors.toString());
        assertTrue(errors.getFirst().matches("amdgpu-pages-5-1001\\.img: refill of BO 0 at 0x7f1000000000 \\(3145728"
                + " bytes\\) on GPU 0x1001 \\(renderD129\\) failed: SDMA submit \\(bytes 1048576\\.\\.2097152\\).*"),
                errors.getFirst());
    }

    @Test
    void shortSdmaCopyThatNeverSignalsKillsTheTask() throws IOException {
        Path images = dumped();
        KfdSimulator.drmFault(128, 0, KfdSimulator.DrmFault.FENCE_HANGS); // GPU 0x1002 is renderD128 there
        List<String> errors = restoreExpectingKill(images);
        assertEquals(2, errors.size(), errors.toString());
        assertTrue(errors.getFirst().startsWith("amdgpu-pages-5-1002.img: refill of BO 1 at 0x7f1004000000 (2097152"
                + " bytes) on GPU 0x1002 (renderD128) failed: SDMA fence did not signal"), errors.getFirst());
    }

    @Test
    void truncatedPagesFileKillsTheTaskAndNamesTheFile() throws IOException {
        Path images = dumped();
        Path pages = images.resolve("amdgpu-pages-5-1002.img");
        long size = Files.size(pages);
        try (FileChannel ch = FileChannel.open(pages, StandardOpenOption.WRITE)) {
            ch.truncate(size - 4096);
        }
        List<String> errors = restoreExpectingKill(images);
        assertEquals(2, errors.size(), errors.toString());
        assertTrue(errors.getFirst().startsWith("amdgpu-pages-5-1002.img: "), errors.getFirst());
    }

    @Test
    void missingGpuRefusesTheRestoreBeforeAnythingIsForked() throws IOException {
        Path images = dumped();
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 0x2001);
        t.connect(SysfsTree.PCIE, 0, 1);
        Path oneGpu = t.write(dir.resolve("one-gpu"));
        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = new AmdgpuPlugin(s -> SimulatedHost.create(oneGpu, dir, Map.of()));
        assertTrue(plugin.init(Stage.RESTORE, criu) < 0);
        List<String> errors = criu.lines(LogLevel.ERROR);
        assertEquals(1, errors.size(), errors.toString());
        assertTrue(errors.getFirst().startsWith("cannot restore AMD GPU state: amdgpu-kfd-5.img: "), errors.getFirst());
        assertFalse(criu.hasChildExecutor(), "nothing registered for criu's children");
    }

    /** A session over the dumped images with this test's channels, its server running. */
    private record Session(RestorePlan plan, RefillChannels channels, RefillSession refill) implements AutoCloseable {
        @Override
        public void close() {
            refill.close();
            channels.close();
            plan.close();
        }
    }

    private Session session(Path images) {
        Topology here = new SysfsTopologyReader(SimulatedGpuProcess.topology(dir.resolve("here"), 0x2001, 0x2002, true))
                .read("Local");
        var host = SimulatedHost.create(dir, dir, Map.of());
        RefillChannels channels = new RefillChannels(host.fdstore().orElseThrow());
        RestorePlan plan = RestorePlan.build(new AmdgpuImages(images), here, Map.of(), e -> { }, channels::fdstoreIdFor);
        RefillSession refill = new RefillSession(plan, new BoRefiller(KfdSimulator.syscalls(), images, 0, plan.localGpus()), channels);
        refill.start();
        return new Session(plan, channels, refill);
    }

    @Test
    void refillRequestCutInItsHeadIsNamedAgainstTheImagesTask() throws Exception {
        try (Session s = session(dumped())) {
            assertEquals(0, KfdSimulator.sendPartialRefill(0, RefillProtocol.MAGIC, 5, 4, new int[0], 0, 8));
            RefillSession.Outcome outcome = s.refill().finish();
            assertEquals(Map.of(4242, List.of("amdgpu-kfd-5.img: refill request ended after 8 of 16 head bytes")),
                    outcome.failuresByTask(), "the image's pid: criu restores the task with it");
        }
    }

    @Test
    void refillRequestEndingAfterSomeFdsIsNamedAndItsFdsClosed() throws Exception {
        try (Session s = session(dumped())) {
            int probe = KfdSimulator.syscalls().open("/dev/dri/renderD200", 2); // a memfd named kfdsim-render-200
            assertEquals(0, KfdSimulator.sendPartialRefill(0, RefillProtocol.MAGIC, 5, 4, new int[]{probe}, 1, 16));
            KfdSimulator.syscalls().close(probe);
            RefillSession.Outcome outcome = s.refill().finish();
            int pid = KfdSimulator.pid();
            assertEquals(Map.of(pid, List.of("amdgpu-kfd-5.img: refill request from pid " + pid
                    + " ended after 1 of 4 dma-buf fds")), outcome.failuresByTask());
            assertFalse(openFds().anyMatch(l -> l.contains("kfdsim-render-200")), "the received fd was closed");
        }
    }

    @Test
    void noRequestAtAllIsNamedAgainstTheImagesTask() throws Exception {
        try (Session s = session(dumped())) {
            assertEquals(Map.of(4242, List.of("no restored task sent the dma-bufs of amdgpu-kfd-5.img")),
                    s.refill().finish().failuresByTask());
        }
    }

    @Test
    void missingRefillChannelFailsTheTasksRestore() throws IOException {
        Path images = dumped();
        Topology here = new SysfsTopologyReader(SimulatedGpuProcess.topology(dir.resolve("here"), 0x2001, 0x2002, true))
                .read("Local");
        try (RestorePlan plan = RestorePlan.build(new AmdgpuImages(images), here, Map.of(), e -> { }, file -> 63)) {
            SimulatedExecutor executor = SimulatedExecutor.load(plan.childPlan());
            KfdSimulator.Task task = KfdSimulator.spawnRestore(executor.restoreExtFile(), executor.context(),
                    SimulatedGpuProcess.KFD_FILE);
            assertEquals(-EBADF, task.result(), "fdstore_get of an id criu never stored");
            assertEquals(SIGKILL, task.reap(true));
        }
    }

    private static java.util.stream.Stream<String> openFds() throws IOException {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.map(p -> {
                try {
                    return Files.readSymbolicLink(p).toString();
                } catch (IOException e) {
                    return "";
                }
            }).toList().stream();
        }
    }

    @Test
    void failedResumeIsOneLineNamingThePid() throws IOException {
        Path images = dumped();
        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = SimulatedGpuProcess.restorePlugin(dir, Map.of());
        assertEquals(0, plugin.init(Stage.RESTORE, criu), String.join("\n", criu.lines()));
        KfdSimulator.Task task = criu.spawnRestore(SimulatedGpuProcess.KFD_FILE);
        assertTrue(task.result() >= 0);
        KfdSimulator.failIoctl(dev.criugpu.amdgpu.bindings.kfd_ioctl_h.KFD_CRIU_OP_RESUME(), 5);
        var e = org.junit.jupiter.api.Assertions.assertThrows(dev.criugpu.api.CriuException.class,
                () -> plugin.resumeDevicesLate(task.pid()));
        assertTrue(e.getMessage().matches("pid " + task.pid() + ": GPU queues not resumed: KFD CRIU RESUME of pid "
                + task.pid() + " on fd \\d+ failed: EIO \\(errno 5\\); killed it so that it cannot run without its GPU"
                + " state \\(this fails the restore\\); .+"), e.getMessage());
        assertEquals(List.of(), criu.lines(LogLevel.ERROR), "the refill itself succeeded");
        assertEquals(SIGKILL, task.reap(false), "the task was killed, not left running without its queues");
        plugin.exit(Stage.RESTORE, 0);
    }
    @Test
    void aStopSignalDuringTheRefillWaitKillsTheTaskAndLetsCriuEnd() throws Throwable {
        Path images = dumped();
        KfdSimulator.drmFault(128, 0, KfdSimulator.DrmFault.FENCE_WAITS); // GPU 0x1002's first refill copy waits
        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = SimulatedGpuProcess.restorePlugin(dir, Map.of("KFD_MAX_BUFFER_SIZE", "1M"));
        assertEquals(0, plugin.init(Stage.RESTORE, criu), String.join("\n", criu.lines()));
        KfdSimulator.Task task = criu.spawnRestore(SimulatedGpuProcess.KFD_FILE);
        assertTrue(task.result() >= 0, "RESTORE_EXT_FILE in the task returned " + task.result());
        // SIGTERM, not SIGINT: a shell starts its background jobs with SIGINT ignored, and an ignored signal stops no wait
        try (ThreadSignals stop = new ThreadSignals(signal_h.SIGTERM)) {
            stop.raiseHere();
            assertEquals(-4, plugin.resumeDevicesLate(task.pid()));
        }
        assertEquals(SIGKILL, task.reap(false), "the task was killed, not left to run on half its GPU memory");
        List<String> errors = criu.lines(LogLevel.ERROR);
        assertEquals(1, errors.size(), errors.toString());
        assertTrue(errors.getFirst().matches("pid " + task.pid() + ": GPU memory not restored: criu received SIGTERM while"
                + " waiting for the (AMD refill poller to take the last refill requests|GPU memory refill of"
                + " amdgpu-kfd-5\\.img \\(pid \\d+\\)); stopped waiting so that criu can end; killed it so that it cannot"
                + " run without its GPU state \\(this fails the restore\\); .+"), errors.getFirst());
        KfdSimulator.drmReleaseFences();
        plugin.exit(Stage.RESTORE, 0);
        assertEquals(0, KfdSimulator.drmLive(), "every libdrm object freed once the copy ended");
    }
}

package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.AmdgpuHost;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.amdgpu.testing.JavaPlanExecutor;
import dev.criugpu.amdgpu.testing.KfdSimulator.VmaQuery;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.SimulatedExecutor;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess;
import dev.criugpu.amdgpu.testing.SimulatedHost;
import dev.criugpu.amdgpu.testing.SysfsTree;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.DOORBELL;
import static dev.criugpu.amdgpu.testing.SysfsTree.PCIE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The restore plan and its executor: acceptance 2 (the C executor in a forked task and the Java reference give
 * the same result on the same plan), the version check, and plans that cannot be built.
 */
class RestoreExecutorTest {
    private static final int ENOTSUP = 95;

    @TempDir
    Path dir;

    private Path images;
    private Topology here;
    private final AmdgpuHost host = SimulatedHost.create(Path.of("/nonexistent"), Path.of("/nonexistent"), Map.of());

    @BeforeEach
    void dumped() throws IOException {
        images = SimulatedGpuProcess.dump(dir, SimulatedGpuProcess.bos(new Random(3)), Map.of());
        KfdSimulator.reset(); // the restore host starts with a fresh KFD
        here = new SysfsTopologyReader(SimulatedGpuProcess.topology(dir.resolve("here"), 0x2001, 0x2002, true)).read("Local");
    }

    @AfterEach
    void tearDown() {
        channels.close();
        KfdSimulator.reset();
    }

    private final RefillChannels channels = new RefillChannels(host.fdstore().orElseThrow());

    private RestorePlan plan() {
        return RestorePlan.build(new AmdgpuImages(images), here, Map.of(), e -> { }, channels::fdstoreIdFor);
    }

    /** Every BO mapping of the image as criu would ask, plus a mapping of another driver, a moved offset, "//". */
    private static List<VmaQuery> queries(CriuKfd kfd) {
        List<VmaQuery> q = new ArrayList<>();
        for (KfdBoEntry bo : kfd.getBoEntriesList()) {
            String path = bo.getAllocFlags() == DOORBELL ? "/dev/kfd"
                    : "/dev/dri/renderD" + (bo.getGpuId() == 0x1001 ? 129 : 128);
            q.add(new VmaQuery(path, bo.getAddr(), bo.getOffset()));
        }
        KfdBoEntry first = kfd.getBoEntries(0);
        q.add(new VmaQuery("/dev/nvidia0", first.getAddr(), first.getOffset()));
        q.add(new VmaQuery("/dev/dri/renderD129", first.getAddr(), first.getOffset() + 4096));
        q.add(new VmaQuery("//dev//dri/renderD129", first.getAddr(), first.getOffset()));
        return q;
    }

    private static String describe(int fd) {
        try {
            return Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString()
                    .replaceFirst("^/memfd:", "").replace(" (deleted)", "");
        } catch (IOException e) {
            return "closed";
        }
    }

    /** The same report kfdsim_report_child writes, from the Java reference. */
    private static String javaReport(JavaPlanExecutor exec, int[] ids, List<VmaQuery> queries) {
        StringBuilder sb = new StringBuilder();
        for (int id : ids) {
            int fd = exec.restoreExtFile(id);
            sb.append("file ").append(id).append(": ").append(fd < 0 ? "error " + fd : describe(fd)).append('\n');
        }
        for (VmaQuery q : queries) {
            long[] out = {0, -1};
            int r = exec.updateVmaMap(q.path(), q.addr(), q.oldOffset(), out);
            String what = r == 1 && out[1] >= 0 ? describe((int) out[1]) : Long.toString(out[1]);
            sb.append(String.format("vma %s %x %x: %d %x %s%n", q.path(), q.addr(), q.oldOffset(), r, r == 1 ? out[0] : 0, what));
        }
        return sb.toString();
    }

    @Test
    void nativeExecutorInAForkedTaskAndTheJavaReferenceGiveTheSameResult() {
        RefillChannels forJavaChannels = new RefillChannels(host.fdstore().orElseThrow());
        int stop = UnixSockets.eventFd();
        try (RestorePlan forC = plan();
             RestorePlan forJava = RestorePlan.build(new AmdgpuImages(images), here, Map.of(), e -> { },
                     forJavaChannels::fdstoreIdFor)) {
            SimulatedExecutor c = SimulatedExecutor.load(forC.childPlan());
            int[] ids = {6, 5, 77}; // the render node before its KFD file, then a file that is not ours
            List<VmaQuery> queries = queries(forC.kfds().get(5));

            // The C executor runs in a forked task; the Java reference then runs here from the same KFD state.
            String fromC = KfdSimulator.reportChild(c.restoreExtFile(), c.updateVmaMap(), c.context(), ids, queries);
            String fromJava = javaReport(new JavaPlanExecutor(forJava.childPlan().sealed().address(), KfdSimulator.syscalls(), 100,
                    SimulatedHost.CALLS.fdstoreGet()), ids, queries);
            assertEquals(fromJava, fromC);

            assertTrue(fromC.startsWith("file 6: kfdsim-render-128\nfile 5: kfdsim-kfd\nfile 77: error -95\n"), fromC);
            assertEquals(5, fromC.lines().filter(l -> l.startsWith("vma ")).limit(6).filter(l -> l.contains(": 1 ")).count(),
                    "VRAM, GTT and doorbell BOs moved; the userptr BO did not:\n" + fromC);
            assertTrue(fromC.contains("vma /dev/nvidia0 7f1000000000 "), fromC);
            assertTrue(fromC.lines().anyMatch(l -> l.startsWith("vma /dev/nvidia0") && l.contains(": -95 ")), fromC);
            assertTrue(fromC.lines().anyMatch(l -> l.startsWith("vma //dev//dri/renderD129") && l.endsWith("kfdsim-render-129")),
                    "criu's doubled slashes are collapsed:\n" + fromC);

            // Both sent the same refill request, each on its plan's channel, with its own pid.
            UnixSockets.signal(stop); // everything was sent: a read must not wait for more
            RefillRequest fromTask = RefillRequestReader.read(channels.mainEnds().get(5), 5, stop);
            RefillRequest fromReference = RefillRequestReader.read(forJavaChannels.mainEnds().get(5), 5, stop);
            assertTrue(fromTask.taskPid() != KfdSimulator.pid() && fromReference.taskPid() == KfdSimulator.pid(),
                    "the forked task put its own pid");
            for (RefillRequest r : List.of(fromTask, fromReference)) {
                assertEquals(5, r.fileId());
                assertArrayEquals(new int[]{0, 1, 2, 5}, r.boIndices());
                for (int fd : r.fds()) assertTrue(describe(fd).startsWith("kfdsim-bo"), describe(fd));
                UnixSockets.closeAll(r.fds());
            }
        } finally {
            forJavaChannels.close();
            UnixSockets.close(stop);
        }
    }

    @Test
    void kfdWithoutCriuSupportFailsInTheTaskWithOneLineAndKeepsNoFd() throws Throwable {
        try (RestorePlan plan = plan()) {
            SimulatedExecutor c = SimulatedExecutor.load(plan.childPlan());
            KfdSimulator.setVersionMinor(7);
            int logged = KfdSimulator.logLines();
            var restore = Linker.nativeLinker().downcallHandle(c.restoreExtFile(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
            long kfdsBefore = openKfdFds();
            assertEquals(-ENOTSUP, (int) restore.invokeExact(c.context(), 5));
            assertEquals(logged + 1, KfdSimulator.logLines());
            assertEquals("1 amdgpu: the KFD ioctl API is older than 1.8, the first with CRIU support; its minor is (found 7)\n",
                    KfdSimulator.lastLog());
            assertEquals(kfdsBefore, openKfdFds(), "the failed program closed the /dev/kfd it opened");
        }
    }

    private static long openKfdFds() throws IOException {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.map(p -> describe(Integer.parseInt(p.getFileName().toString()))).filter("kfdsim-kfd"::equals).count();
        }
    }

    @Test
    void planFailsNamingTheImageWhenNoLocalGpuMatches() {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 0x2001).prop("device_id", 0x1111);
        t.gpu(2, 0x2002);
        t.connect(PCIE, 0, 1).connect(PCIE, 0, 2);
        Topology other = new SysfsTopologyReader(t.write(dir.resolve("other"))).read("Local");
        CriuException e = assertThrows(CriuException.class,
                () -> RestorePlan.build(new AmdgpuImages(images), other, Map.of(), x -> { }, file -> 0));
        assertTrue(e.getMessage().startsWith("amdgpu-kfd-5.img: "), e.getMessage());
        assertFalse(e.getMessage().isBlank());
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({"100, KFD GET_VERSION", "3, KFD RESTORE of amdgpu-kfd-5.img"})
    void anIoctlFailingInTheTaskFailsItsProgramWithOneLineAndKeepsNoFd(int op, String step) throws Throwable {
        try (RestorePlan plan = plan()) {
            SimulatedExecutor c = SimulatedExecutor.load(plan.childPlan());
            var restore = Linker.nativeLinker().downcallHandle(c.restoreExtFile(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
            long before = openDeviceFds();
            KfdSimulator.failIoctl(op, 5);
            assertEquals(-5, (int) restore.invokeExact(c.context(), 5));
            assertEquals("1 amdgpu: " + step + " failed: Input/output error\n", KfdSimulator.lastLog());
            assertEquals(before, openDeviceFds(), "the failed program closed the KFD and render fds it opened");
        }
    }

    private static long openDeviceFds() throws IOException {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.map(p -> describe(Integer.parseInt(p.getFileName().toString())))
                    .filter(d -> d.startsWith("kfdsim-kfd") || d.startsWith("kfdsim-render")).count();
        }
    }
}

package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.bindings.amdgpu_plan;
import dev.criugpu.amdgpu.bindings.amdgpu_plan_gpu;
import dev.criugpu.amdgpu.bindings.amdgpu_plan_kfd;
import dev.criugpu.amdgpu.bindings.amdgpu_seam;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.dump.KfdFileDumper;
import dev.criugpu.amdgpu.dump.RenderNodeDumper;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.kfd.KfdFile;
import dev.criugpu.amdgpu.sys.Syscalls;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.NativeTestPrograms;
import dev.criugpu.amdgpu.testing.SysfsTree;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static dev.criugpu.amdgpu.testing.SysfsTree.PCIE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Dump with the Java path, plan the restore in Java, run the C executor (libamdgpu_restore.so) against the
 * simulated KFD in this process, which plays the restored task.
 */
class RestoreExecutorTest {
    private static final int ENOTSUP = 95;
    private static final int VRAM = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM();
    private static final int GTT = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_GTT();
    private static final int DOORBELL = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL();
    private static final int USERPTR = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR();

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup EXEC =
            SymbolLookup.libraryLookup(NativeTestPrograms.path("libamdgpu_restore.so"), Arena.global());
    private static final MethodHandle RESTORE_FILE = LINKER.downcallHandle(EXEC.find("amdgpu_restore_file").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    private static final MethodHandle UPDATE_VMA = LINKER.downcallHandle(EXEC.find("amdgpu_update_vma").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));

    @TempDir
    Path dir;

    private final Syscalls sys = KfdSimulator.syscalls();
    private final Arena arena = Arena.ofConfined();
    private MemorySegment seam;

    @BeforeEach
    void setUp() {
        KfdSimulator.reset();
        seam = amdgpu_seam.allocate(arena);
        amdgpu_seam.open(seam, KfdSimulator.symbol("kfdsim_open"));
        amdgpu_seam.close(seam, KfdSimulator.symbol("kfdsim_close"));
        amdgpu_seam.ioctl(seam, KfdSimulator.symbol("kfdsim_ioctl"));
        amdgpu_seam.find_unused_fd(seam, KfdSimulator.symbol("kfdsim_find_unused_fd"));
        amdgpu_seam.log(seam, KfdSimulator.symbol("kfdsim_log"));
    }

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
        arena.close();
    }

    private Topology topology(String name, int firstGpuId, int firstNode) {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(firstNode, firstGpuId);
        t.gpu(firstNode + 1, firstGpuId + 1);
        t.connect(PCIE, 0, firstNode).connect(PCIE, 0, firstNode + 1);
        return new SysfsTopologyReader(t.write(dir.resolve(name))).read(name);
    }

    /** The dump side: host "there" with GPUs 0x1001, 0x1002 (render 128, 129) and a process using both. */
    private record DumpHost(AmdgpuImages images, Topology topology, int target, KfdFileDumper dumper) { }

    private DumpHost twoGpuProcess() throws Exception {
        AmdgpuImages images = new AmdgpuImages(Files.createDirectories(dir.resolve("images")));
        Topology there = topology("there", 0x1001, 1);
        int target = KfdSimulator.createProcess(4242, KfdSimulator.gettid());
        KfdSimulator.addGpu(target, 0x1001, 0x1001);
        KfdSimulator.addGpu(target, 0x1002, 0x1002);
        return new DumpHost(images, there, target, new KfdFileDumper(sys, images, there, dir.resolve("no-shm"), 0));
    }

    private int restoreFile(MemorySegment plan, int id) throws Throwable {
        return (int) RESTORE_FILE.invokeExact(plan, seam, id);
    }

    private int updateVma(MemorySegment plan, String path, long addr, long old, MemorySegment newOff, MemorySegment fd)
            throws Throwable {
        return (int) UPDATE_VMA.invokeExact(plan, seam, arena.allocateFrom(path), addr, old, newOff, fd);
    }

    private static String fdTarget(int fd) throws Exception {
        return Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString();
    }

    @Test
    void dumpThenPlanThenExecuteRestoresKfdRenderNodesAndVmas() throws Throwable {
        // Dump: a process on GPUs 0x1001 (render 128) and 0x1002 (render 129).
        DumpHost there = twoGpuProcess();
        AmdgpuImages images = there.images();
        int target = there.target();
        KfdSimulator.addBo(target, 0x7f00_0000_0000L, 1 << 16, 0x1001, VRAM, 1);
        KfdSimulator.addBo(target, 0x7f00_0010_0000L, 8192, 0x1002, GTT, 2);
        KfdSimulator.addBo(target, 0x7f00_0020_0000L, 4096, 0x1002, DOORBELL, 0);
        KfdSimulator.addBo(target, 0x7f00_0030_0000L, 4096, 0x1001, USERPTR, 0);
        KfdSimulator.setObjects(target, 1, new byte[]{7, 7});
        KfdFileDumper dumper = there.dumper();
        CriuKfd dumped = dumper.dump(target, 5);
        new RenderNodeDumper(images, there.topology(), dumper::checkpointMaps).dump(129, 6);

        // Plan on a host whose GPUs have other ids and render minors (nodes 3,4 → renderD130, renderD131).
        Topology here = topology("here", 0x2001, 3);
        try (RestorePlan plan = RestorePlan.build(images, here, Map.of(), e -> { })) {
            MemorySegment p = plan.address();
            assertEquals(2, plan.mappings().get(5).gpus().size());
            MemorySegment k = amdgpu_plan_kfd.reinterpret(amdgpu_plan.kfd(p));
            assertEquals(4242, amdgpu_plan_kfd.vpid(k));
            MemorySegment gpu0 = amdgpu_plan_gpu.reinterpret(amdgpu_plan_kfd.gpus(k));
            assertTrue(amdgpu_plan_gpu.render_minor(gpu0) == 130 || amdgpu_plan_gpu.render_minor(gpu0) == 131);

            // RESTORE_EXT_FILE(5) in "the restored task" (this process).
            int kfd = restoreFile(p, 5);
            assertTrue(kfd >= 0, "restore returned " + kfd);
            assertTrue(fdTarget(kfd).contains("kfdsim-kfd"), fdTarget(kfd));
            int pid = KfdSimulator.pid();
            assertEquals(0, KfdSimulator.resumed(pid), "restored, queues not yet resumed");
            for (int g = 0; g < 2; g++) {
                int drm = KfdSimulator.restoredDrmFd(pid, g);
                assertTrue(drm >= 100, "render fd " + drm + " sits above the task's image fds");
                assertTrue(fdTarget(drm).contains("kfdsim-render"), fdTarget(drm));
            }

            // The render-node file is a dup of the render fd kept for the mapped GPU.
            int render = restoreFile(p, 6);
            assertTrue(render >= 0 && fdTarget(render).contains("kfdsim-render"));
            sys.close(render);

            // UPDATE_VMA_MAP: VRAM/GTT/doorbell BOs moved; userptr BOs are not device mappings.
            MemorySegment newOff = arena.allocate(JAVA_LONG);
            MemorySegment pluginFd = arena.allocate(JAVA_INT);
            KfdBoEntry vram = dumped.getBoEntries(0);
            assertEquals(1, updateVma(p, "/dev/dri//renderD130", vram.getAddr(), vram.getOffset(), newOff, pluginFd));
            long moved = newOff.get(JAVA_LONG, 0);
            assertNotEquals(vram.getOffset(), moved);
            int fd = pluginFd.get(JAVA_INT, 0);
            assertTrue(fd >= 0 && fdTarget(fd).contains("kfdsim-render"));
            MemorySegment map = sys.mmap(vram.getSize(), Syscalls.PROT_READ, fd, moved);
            assertEquals(0, map.get(ValueLayout.JAVA_BYTE, 5), "contents are not restored yet");
            sys.munmap(map);
            sys.close(fd);

            KfdBoEntry doorbell = dumped.getBoEntries(2);
            assertEquals(1, updateVma(p, "/dev/kfd", doorbell.getAddr(), doorbell.getOffset(), newOff, pluginFd));
            assertEquals(-1, pluginFd.get(JAVA_INT, 0), "criu reopens /dev/kfd itself");

            KfdBoEntry userptr = dumped.getBoEntries(3);
            assertEquals(0, updateVma(p, "/dev/kfd", userptr.getAddr(), userptr.getOffset(), newOff, pluginFd));
            assertEquals(0, updateVma(p, "/dev/kfd", vram.getAddr(), vram.getOffset() + 4096, newOff, pluginFd));
            assertEquals(-ENOTSUP, updateVma(p, "/dev/nvidia0", vram.getAddr(), vram.getOffset(), newOff, pluginFd));
            assertEquals(-ENOTSUP, restoreFile(p, 77), "a file that is not ours");

            // RESUME_DEVICES_LATE from "the main process".
            int fresh = sys.open(KfdFile.DEVICE, Syscalls.O_RDWR);
            new KfdFile(sys, fresh).resume(pid);
            sys.close(fresh);
            assertEquals(1, KfdSimulator.resumed(pid));
            sys.close(kfd);
        }
    }

    @Test
    void planFailsNamingTheImageWhenNoLocalGpuMatches() throws Exception {
        DumpHost there = twoGpuProcess();
        there.dumper().dump(there.target(), 5);

        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 0x2001).prop("device_id", 0x1111);
        t.gpu(2, 0x2002);
        t.connect(PCIE, 0, 1).connect(PCIE, 0, 2);
        Topology here = new SysfsTopologyReader(t.write(dir.resolve("here"))).read("Local");
        CriuException e = assertThrows(CriuException.class, () -> RestorePlan.build(there.images(), here, Map.of(), x -> { }));
        assertTrue(e.getMessage().startsWith("amdgpu-kfd-5.img: "), e.getMessage());
        assertTrue(e.getMessage().contains("device_id 0x738c != 0x1111"), e.getMessage());
    }

    @Test
    void kfdWithoutCriuSupportFailsInTheExecutorAndLogs() throws Throwable {
        DumpHost there = twoGpuProcess();
        there.dumper().dump(there.target(), 5);
        try (RestorePlan plan = RestorePlan.build(there.images(), there.topology(), Map.of(), e -> { })) {
            KfdSimulator.setVersionMinor(7);
            int logged = KfdSimulator.logLines();
            assertEquals(-ENOTSUP, restoreFile(plan.address(), 5));
            assertEquals(logged + 1, KfdSimulator.logLines());
            assertEquals("1 amdgpu: KFD ioctl API 1.7 lacks CRIU support (need 1.8)\n", KfdSimulator.lastLog());
        }
    }
}

package dev.criugpu.amdgpu;

import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.bindings.stat;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.sys.Syscalls;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.SimulatedCriu;
import dev.criugpu.amdgpu.testing.SimulatedHost;
import dev.criugpu.amdgpu.testing.SysfsTree;
import dev.criugpu.api.Errno;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.criugpu.amdgpu.dump.DeviceNumbers.makedev;
import static dev.criugpu.amdgpu.testing.SysfsTree.PCIE;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Acceptance 1: a simulated GPU process (two GPUs, several multi-MiB BOs of random bytes, queues and events) is
 * dumped through the plugin's hooks to images, then restored through the hooks into a fresh simulated process
 * on a host whose GPUs carry other ids, in the other order: the restored task's native executor (called as the
 * shim calls it in a forked child) restores KFD state and sends its dma-bufs over the refill socket, criu's main
 * process refills them through simulated SDMA, and RESUME_DEVICES_LATE resumes the queues.
 */
class AmdgpuPluginCycleTest {
    static final int VRAM = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM();
    static final int GTT = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_GTT();
    static final int DOORBELL = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL();
    static final int USERPTR = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR();
    static final int DEVICE_A = 0x738c;
    static final int DEVICE_B = 0x7408;

    @TempDir
    Path dir;

    private final Syscalls sys = KfdSimulator.syscalls();
    private final Arena arena = Arena.ofConfined();

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
        arena.close();
    }

    /** GPU ids a (device A) and b (device B) on nodes 1 and 2 (render 128, 129). */
    Path topology(String name, int a, int b, boolean swapped) {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, swapped ? b : a).prop("device_id", swapped ? DEVICE_B : DEVICE_A);
        t.gpu(2, swapped ? a : b).prop("device_id", swapped ? DEVICE_A : DEVICE_B);
        t.connect(PCIE, 0, 1).connect(PCIE, 0, 2);
        return t.write(dir.resolve(name));
    }

    /** A BO the test put into the simulated process, with its bytes. */
    record Bo(long addr, int size, int gpu, int flags, byte[] bytes) {
        boolean hasContents() {
            return (flags & (VRAM | GTT)) != 0;
        }
    }

    static List<Bo> bos(Random random) {
        List<Bo> bos = new ArrayList<>();
        int[][] spec = {{3 << 20, 0x1001, VRAM}, {2 << 20, 0x1002, GTT}, {(5 << 20) + 4096, 0x1002, VRAM},
                {4096, 0x1001, DOORBELL}, {8192, 0x1001, USERPTR}, {(1 << 20) + 12288, 0x1001, GTT}};
        long addr = 0x7f10_0000_0000L;
        for (int[] s : spec) {
            byte[] b = new byte[s[0]];
            random.nextBytes(b);
            bos.add(new Bo(addr, s[0], s[1], s[2], b));
            addr += 64L << 20;
        }
        return bos;
    }

    /** The dumped process: pid 4242, seized by this thread, using GPUs 0x1001 and 0x1002. */
    int process(List<Bo> bos) {
        int fd = KfdSimulator.createProcess(4242, KfdSimulator.gettid());
        KfdSimulator.addGpu(fd, 0x1001, 0x1001);
        KfdSimulator.addGpu(fd, 0x1002, 0x1002);
        for (int i = 0; i < bos.size(); i++) {
            Bo b = bos.get(i);
            KfdSimulator.addBo(fd, b.addr(), b.size(), b.gpu(), b.flags(), i);
            if (b.hasContents()) KfdSimulator.fillBo(fd, i, b.bytes());
        }
        KfdSimulator.setObjects(fd, 5, new byte[]{1, 2, 3, 4, 5, 6, 7, 8});
        return fd;
    }

    int vma(AmdgpuPlugin plugin, long rdev) {
        MemorySegment st = stat.allocate(arena);
        stat.st_rdev(st, rdev);
        return plugin.handleDeviceVma(-1, st);
    }

    /** Dumps the process with a render fd first, then its KFD fd; returns the images directory. */
    Path dump(List<Bo> bos, Map<String, String> env) throws Exception {
        Path images = Files.createDirectories(dir.resolve("images"));
        int kfd = process(bos);
        SimulatedCriu criu = new SimulatedCriu(Stage.DUMP, images, InventoryClaim.NONE);
        AmdgpuPlugin plugin = new AmdgpuPlugin(s -> SimulatedHost.create(topology("there", 0x1001, 0x1002, false), dir, env));
        assertEquals(0, plugin.init(Stage.DUMP, criu));

        assertEquals(0, vma(plugin, makedev(235, 3)), "KFD mapping");
        assertEquals(0, vma(plugin, makedev(226, 129)), "render-node mapping");
        assertEquals(Errno.NOT_SUPPORTED, vma(plugin, makedev(1, 5)), "/dev/zero is not ours");
        int notOurs = sys.open("/dev/null", Syscalls.O_RDONLY);
        assertEquals(Errno.NOT_SUPPORTED, plugin.dumpExtFile(notOurs, 3));
        sys.close(notOurs);

        int render = sys.open("/dev/dri/renderD129", Syscalls.O_RDWR);
        assertEquals(0, plugin.dumpExtFile(render, 6), "a render fd before its KFD fd");
        assertTrue(criu.inventory().isEmpty(), "no KFD state saved yet");
        assertEquals(0, plugin.dumpExtFile(kfd, 5));
        assertEquals(List.of("amdgpu_plugin"), criu.inventory());
        assertFalse(KfdSimulator.paused(kfd), "queues unpaused after the dump");
        plugin.exit(Stage.DUMP, 0);
        sys.close(render);
        return images;
    }

    @Test
    void dumpThenRestoreOntoSwappedGpusRefillsEveryBoAndResumes() throws Throwable {
        List<Bo> bos = bos(new Random(42));
        Path images = dump(bos, Map.of("KFD_MAX_BUFFER_SIZE", "1M"));
        AmdgpuImages files = new AmdgpuImages(images);
        CriuKfd kfdImage = files.readKfd(5);
        assertEquals(0x1002, files.readRenderNode(6).getGpuId());
        assertTrue(Files.size(images.resolve("amdgpu-pages-5-1001.img")) > 4 << 20);

        // Restore on a host where device A is GPU 0x2001 at renderD129 and device B is GPU 0x2002 at renderD128.
        KfdSimulator.reset();
        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = new AmdgpuPlugin(s -> SimulatedHost.create(topology("here", 0x2001, 0x2002, true), dir,
                Map.of("KFD_MAX_BUFFER_SIZE", "1M")));
        assertEquals(0, plugin.init(Stage.RESTORE, criu), String.join("\n", criu.lines()));
        assertTrue(criu.hasChildExecutor());
        assertEquals(0, plugin.postForking());

        // The restored task: RESTORE_EXT_FILE for the KFD fd and the render fd, UPDATE_VMA_MAP per device mapping.
        int kfd = criu.childRestoreExtFile(5);
        assertTrue(kfd >= 0, "RESTORE_EXT_FILE returned " + kfd + "; log: " + KfdSimulator.lastLog());
        int render = criu.childRestoreExtFile(6);
        assertTrue(render >= 0);
        assertEquals(Errno.NOT_SUPPORTED, criu.childRestoreExtFile(77), "a file id that is not ours");
        int pid = KfdSimulator.pid();
        assertEquals(0, KfdSimulator.resumed(pid), "queues stay evicted until RESUME_DEVICES_LATE");

        MemorySegment newOffset = arena.allocate(JAVA_LONG);
        MemorySegment pluginFd = arena.allocate(JAVA_INT);
        Map<Integer, MemorySegment> restored = new HashMap<>();
        for (int i = 0; i < bos.size(); i++) {
            Bo b = bos.get(i);
            KfdBoEntry e = kfdImage.getBoEntries(i);
            boolean device = (b.flags() & (VRAM | GTT | DOORBELL)) != 0;
            String path = b.flags() == DOORBELL ? "/dev/kfd" : "/dev/dri/renderD" + (b.gpu() == 0x1001 ? 129 : 128);
            int r = criu.childUpdateVmaMap(arena.allocateFrom(path), e.getAddr(), e.getOffset(), newOffset, pluginFd);
            assertEquals(device ? 1 : 0, r, "UPDATE_VMA_MAP of BO " + i);
            if (!device) continue;
            assertNotEquals(e.getOffset(), newOffset.get(JAVA_LONG, 0), "BO " + i + " moved");
            if (b.flags() == DOORBELL) {
                assertEquals(-1, pluginFd.get(JAVA_INT, 0));
                continue;
            }
            int fd = pluginFd.get(JAVA_INT, 0);
            String node = Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString();
            assertTrue(node.contains("kfdsim-render-" + (b.gpu() == 0x1001 ? 129 : 128)), "BO " + i + " maps through " + node
                    + "; " + criu.lines());
            restored.put(i, sys.mmap(b.size(), Syscalls.PROT_READ, fd, newOffset.get(JAVA_LONG, 0)));
            sys.close(fd);
        }

        assertEquals(0, plugin.resumeDevicesLate(pid), String.join("\n", criu.lines()));
        assertEquals(1, KfdSimulator.resumed(pid));
        for (var e : restored.entrySet()) {
            assertArrayEquals(bos.get(e.getKey()).bytes(), e.getValue().toArray(JAVA_BYTE), "contents of BO " + e.getKey());
            sys.munmap(e.getValue());
        }
        assertEquals(2, KfdSimulator.drmSubmits(128) > 0 && KfdSimulator.drmSubmits(129) > 0 ? 2 : 0,
                "both GPUs' SDMA engines refilled");
        plugin.exit(Stage.RESTORE, 0);
        assertEquals(0, KfdSimulator.drmLive(), "every libdrm object freed");
        sys.close(render);
        sys.close(kfd);
    }
}

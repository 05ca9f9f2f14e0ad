package dev.criugpu.amdgpu;

import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.SimulatedCriu;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess.Bo;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess;
import dev.criugpu.api.DeviceFile;
import dev.criugpu.api.Errno;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.sys.Syscalls;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.criugpu.amdgpu.dump.DeviceNumbers.makedev;
import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.DOORBELL;
import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.GTT;
import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.VRAM;
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

    @TempDir
    Path dir;

    private final Syscalls sys = KfdSimulator.syscalls();
    private final Arena arena = Arena.ofConfined();

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
        arena.close();
    }

    int vma(AmdgpuPlugin plugin, long rdev) {
        return plugin.handleDeviceVma(-1, new DeviceFile(0, 0, 0020600, rdev));
    }

    /** Dumps the process with a render fd first, then its KFD fd; returns the images directory. */
    Path dump(List<Bo> bos, Map<String, String> env) throws Exception {
        Path images = Files.createDirectories(dir.resolve("images"));
        int kfd = SimulatedGpuProcess.create(bos);
        SimulatedCriu criu = new SimulatedCriu(Stage.DUMP, images, InventoryClaim.NONE);
        AmdgpuPlugin plugin = SimulatedGpuProcess.dumpPlugin(dir, env);
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
        List<Bo> bos = SimulatedGpuProcess.bos(new Random(42));
        Path images = dump(bos, Map.of("KFD_MAX_BUFFER_SIZE", "1M"));
        AmdgpuImages files = new AmdgpuImages(images);
        CriuKfd kfdImage = files.readKfd(5);
        assertEquals(0x1002, files.readRenderNode(6).getGpuId());
        assertTrue(Files.size(images.resolve("amdgpu-pages-5-1001.img")) > 4 << 20);

        // Restore on a host where device A is GPU 0x2001 at renderD129 and device B is GPU 0x2002 at renderD128.
        KfdSimulator.reset();
        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = SimulatedGpuProcess.restorePlugin(dir, Map.of("KFD_MAX_BUFFER_SIZE", "1M"));
        assertEquals(0, plugin.init(Stage.RESTORE, criu), String.join("\n", criu.lines()));
        assertTrue(criu.hasChildExecutor());

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

    @Test
    void processOnOneOfTwoGpusRestoresOntoTheMatchingGpu() throws Throwable {
        byte[] bytes = new byte[(1 << 20) + 4096];
        new Random(9).nextBytes(bytes);
        Path images = Files.createDirectories(dir.resolve("images"));
        int kfd = KfdSimulator.createProcess(4242, KfdSimulator.gettid());
        KfdSimulator.addGpu(kfd, 0x1002, 0x1002);
        KfdSimulator.addBo(kfd, 0x7f20_0000_0000L, bytes.length, 0x1002, VRAM, 0);
        KfdSimulator.fillBo(kfd, 0, bytes);
        AmdgpuPlugin dumper = SimulatedGpuProcess.dumpPlugin(dir, Map.of());
        assertEquals(0, dumper.init(Stage.DUMP, new SimulatedCriu(Stage.DUMP, images, InventoryClaim.NONE)));
        assertEquals(0, dumper.dumpExtFile(kfd, 5), "a process may leave visible GPUs unused (upstream #2723)");
        KfdBoEntry bo = new AmdgpuImages(images).readKfd(5).getBoEntries(0);

        KfdSimulator.reset();
        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = SimulatedGpuProcess.restorePlugin(dir, Map.of());
        assertEquals(0, plugin.init(Stage.RESTORE, criu), String.join("\n", criu.lines()));
        int restored = criu.childRestoreExtFile(5);
        assertTrue(restored >= 0);
        MemorySegment newOffset = arena.allocate(JAVA_LONG);
        MemorySegment pluginFd = arena.allocate(JAVA_INT);
        // device B (GPU 0x1002 there) is GPU 0x2002 at renderD128 here
        assertEquals(1, criu.childUpdateVmaMap(arena.allocateFrom("/dev/dri/renderD128"), bo.getAddr(), bo.getOffset(),
                newOffset, pluginFd));
        assertTrue(Files.readSymbolicLink(Path.of("/proc/self/fd/" + pluginFd.get(JAVA_INT, 0))).toString()
                .contains("kfdsim-render-128"));
        MemorySegment map = sys.mmap(bytes.length, Syscalls.PROT_READ, pluginFd.get(JAVA_INT, 0), newOffset.get(JAVA_LONG, 0));
        assertEquals(0, plugin.resumeDevicesLate(KfdSimulator.pid()));
        assertArrayEquals(bytes, map.toArray(JAVA_BYTE));
        sys.munmap(map);
        plugin.exit(Stage.RESTORE, 0);
        sys.close(pluginFd.get(JAVA_INT, 0));
        sys.close(restored);
    }
}

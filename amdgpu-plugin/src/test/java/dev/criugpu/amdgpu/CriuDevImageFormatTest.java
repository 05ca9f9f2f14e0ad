package dev.criugpu.amdgpu;

import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.FramedFile;
import dev.criugpu.amdgpu.images.ImageFormat;
import dev.criugpu.amdgpu.images.proto.CriuDmabufNode;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.CriuRenderNode;
import dev.criugpu.amdgpu.images.proto.DrmBoEntry;
import dev.criugpu.amdgpu.images.proto.DrmVmEntry;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.SimulatedCriu;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess.Bo;
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

import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.DOORBELL;
import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.GTT;
import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.VRAM;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * criu-dev's image format (criu 4.3 to be) on the simulator: what our dump writes in each format, and restores of
 * criu-dev-format images (as criu-dev's plugin writes them: a GEM handle on every KFD BO, the render node's file id,
 * minor and DRM BO list) by our plugin, contents bit-identical; images with what only criu-dev restores (DRM BOs,
 * dma-buf fds) are refused at init with one line.
 */
class CriuDevImageFormatTest {
    private static final Map<String, String> ENV = Map.of("KFD_MAX_BUFFER_SIZE", "1M");

    @TempDir
    Path dir;

    private final Syscalls sys = KfdSimulator.syscalls();
    private final Arena arena = Arena.ofConfined();

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
        arena.close();
    }

    /** Dumps a two-GPU process (render fd of GPU 0x1002, file 6, before the KFD fd, file 5) through the hooks. */
    private Path dump(List<Bo> bos, Map<String, String> env) {
        Path images = dir.resolve("images");
        try {
            Files.createDirectories(images);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        int kfd = SimulatedGpuProcess.create(bos);
        SimulatedCriu criu = new SimulatedCriu(Stage.DUMP, images, InventoryClaim.NONE);
        AmdgpuPlugin plugin = SimulatedGpuProcess.dumpPlugin(dir, env);
        assertEquals(0, plugin.init(Stage.DUMP, criu));
        int render = sys.open("/dev/dri/renderD129", Syscalls.O_RDWR);
        assertEquals(0, plugin.dumpExtFile(render, 6), String.join("\n", criu.lines()));
        assertEquals(0, plugin.dumpExtFile(kfd, 5), String.join("\n", criu.lines()));
        assertFalse(KfdSimulator.paused(kfd));
        plugin.exit(Stage.DUMP, 0);
        sys.close(render);
        return images;
    }

    @Test
    void defaultDumpWritesCriuDevFormat() {
        Path images = dump(SimulatedGpuProcess.bos(new Random(7)), ENV);
        AmdgpuImages files = new AmdgpuImages(images);
        CriuKfd kfd = files.readKfd(5);
        assertEquals(ImageFormat.CRIU_DEV, AmdgpuImages.formatOf(kfd));
        for (KfdBoEntry bo : kfd.getBoEntriesList()) {
            assertTrue(bo.hasHandle());
            assertEquals(ImageFormat.NO_HANDLE, bo.getHandle(), "no BO is shared with a dma-buf fd or DRM BO");
        }
        // The render fd came first (written provisionally with the actual id), then was rewritten with the user id;
        // both times with criu-dev's fields.
        CriuRenderNode node = files.readRenderNode(6);
        assertEquals(CriuRenderNode.newBuilder().setGpuId(0x1002).setId(6).setDrmRenderMinor(129).setNumOfBos(0).build(),
                node);
        assertEquals(ImageFormat.CRIU_DEV, AmdgpuImages.formatOf(node));
    }

    @Test
    void v42DumpWritesNoCriuDevField() {
        Map<String, String> env = new HashMap<>(ENV);
        env.put(ImageFormat.ENV, "v4.2");
        Path images = dump(SimulatedGpuProcess.bos(new Random(7)), env);
        AmdgpuImages files = new AmdgpuImages(images);
        CriuKfd kfd = files.readKfd(5);
        assertEquals(ImageFormat.V4_2, AmdgpuImages.formatOf(kfd));
        assertTrue(kfd.getBoEntriesList().stream().noneMatch(KfdBoEntry::hasHandle));
        assertEquals(CriuRenderNode.newBuilder().setGpuId(0x1002).build(), files.readRenderNode(6));
    }

    @Test
    void unknownFormatFailsTheDumpWithOneLine() {
        Map<String, String> env = new HashMap<>(ENV);
        env.put(ImageFormat.ENV, "v4.3");
        Path images = dir.resolve("images");
        int kfd = SimulatedGpuProcess.create(SimulatedGpuProcess.bos(new Random(1)));
        try {
            Files.createDirectories(images);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        SimulatedCriu criu = new SimulatedCriu(Stage.DUMP, images, InventoryClaim.NONE);
        AmdgpuPlugin plugin = SimulatedGpuProcess.dumpPlugin(dir, env);
        assertEquals(0, plugin.init(Stage.DUMP, criu));
        var e = org.junit.jupiter.api.Assertions.assertThrows(dev.criugpu.api.CriuException.class,
                () -> plugin.dumpExtFile(kfd, 5));
        assertEquals("amdgpu-kfd-5.img: AMDGPU_IMAGE_FORMAT=v4.3: not an image format (criu-dev or v4.2)", e.getMessage());
        assertEquals(Errno.EINVAL, e.errno());
        assertFalse(KfdSimulator.paused(kfd), "refused before PROCESS_INFO");
        assertFalse(Files.exists(images.resolve("amdgpu-kfd-5.img")));
        plugin.exit(Stage.DUMP, 1);
    }

    /** criu-dev's plugin writes the GEM handle its own render fd got for each BO's dma-buf: any number. */
    private static void asCriuDevWritesThem(Path images) {
        AmdgpuImages files = new AmdgpuImages(images);
        CriuKfd kfd = files.readKfd(5);
        CriuKfd.Builder b = kfd.toBuilder();
        for (int i = 0; i < b.getBoEntriesCount(); i++) {
            b.setBoEntries(i, b.getBoEntries(i).toBuilder().setHandle(i + 1));
        }
        replace(images, "amdgpu-kfd-5.img", b.build().toByteArray());
    }

    @Test
    void criuDevImagesWithGemHandlesRestoreBitIdentical() throws Throwable {
        List<Bo> bos = SimulatedGpuProcess.bos(new Random(42));
        Path images = dump(bos, ENV);
        asCriuDevWritesThem(images);
        assertEquals(3, new AmdgpuImages(images).readKfd(5).getBoEntries(2).getHandle());
        restoreAndCompare(images, bos);
    }

    @Test
    void v42ImagesStillRestoreBitIdentical() throws Throwable {
        List<Bo> bos = SimulatedGpuProcess.bos(new Random(43));
        Map<String, String> env = new HashMap<>(ENV);
        env.put(ImageFormat.ENV, "v4.2");
        Path images = dump(bos, env);
        restoreAndCompare(images, bos);
    }

    /** Restores onto the host with other GPU ids in the other order and compares every device BO's contents. */
    private void restoreAndCompare(Path images, List<Bo> bos) throws Throwable {
        CriuKfd kfdImage = new AmdgpuImages(images).readKfd(5);
        KfdSimulator.reset();
        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = SimulatedGpuProcess.restorePlugin(dir, ENV);
        assertEquals(0, plugin.init(Stage.RESTORE, criu), String.join("\n", criu.lines()));
        int kfd = criu.childRestoreExtFile(5);
        assertTrue(kfd >= 0, "RESTORE_EXT_FILE returned " + kfd + "; log: " + KfdSimulator.lastLog());
        int render = criu.childRestoreExtFile(6);
        assertTrue(render >= 0);
        assertTrue(Files.readSymbolicLink(Path.of("/proc/self/fd/" + render)).toString().contains("kfdsim-render-128"),
                "GPU 0x1002 is local GPU 0x2002 at renderD128");
        int pid = KfdSimulator.pid();
        MemorySegment newOffset = arena.allocate(JAVA_LONG);
        MemorySegment pluginFd = arena.allocate(JAVA_INT);
        Map<Integer, MemorySegment> restored = new HashMap<>();
        for (int i = 0; i < bos.size(); i++) {
            Bo b = bos.get(i);
            if ((b.flags() & (VRAM | GTT)) == 0 || b.flags() == DOORBELL) continue;
            KfdBoEntry e = kfdImage.getBoEntries(i);
            String path = "/dev/dri/renderD" + (b.gpu() == 0x1001 ? 129 : 128);
            assertEquals(1, criu.childUpdateVmaMap(arena.allocateFrom(path), e.getAddr(), e.getOffset(), newOffset,
                    pluginFd), "UPDATE_VMA_MAP of BO " + i);
            int fd = pluginFd.get(JAVA_INT, 0);
            restored.put(i, sys.mmap(b.size(), Syscalls.PROT_READ, fd, newOffset.get(JAVA_LONG, 0)));
            sys.close(fd);
        }
        assertEquals(4, restored.size(), "the VRAM and GTT BOs");
        assertEquals(0, plugin.resumeDevicesLate(pid), String.join("\n", criu.lines()));
        assertEquals(1, KfdSimulator.resumed(pid));
        for (var e : restored.entrySet()) {
            assertArrayEquals(bos.get(e.getKey()).bytes(), e.getValue().toArray(JAVA_BYTE), "contents of BO " + e.getKey());
            sys.munmap(e.getValue());
        }
        plugin.exit(Stage.RESTORE, 0);
        sys.close(render);
        sys.close(kfd);
    }

    @Test
    void renderNodeWithDrmBosIsRefusedAtInit() {
        Path images = dump(SimulatedGpuProcess.bos(new Random(5)), ENV);
        DrmBoEntry bo = DrmBoEntry.newBuilder().setAddr(0x7f30_0000_0000L).setSize(1 << 20).setOffset(0x10_0000_0000L)
                .setAllocFlags(0).setAlignment(4096).setPreferredDomains(4).setHandle(1).setIsImport(0).setNumOfVms(1)
                .addVmEntries(DrmVmEntry.newBuilder().setAddr(0x7f30_0000_0000L).setSize(1 << 20).setOffset(0).setFlags(0xe))
                .build();
        CriuRenderNode withBo = CriuRenderNode.newBuilder().setGpuId(0x1002).setId(6).setDrmRenderMinor(129)
                .setNumOfBos(1).addBoEntries(bo).build();
        replace(images, "amdgpu-renderD-6.img", withBo.toByteArray());
        assertEquals(withBo, new AmdgpuImages(images).readRenderNode(6), "it reads");
        refusedAtInit(images, "amdgpu-renderD-6.img: holds 1 DRM buffer objects (criu-dev)");
    }

    @Test
    void dmabufFdImageIsRefusedAtInit() {
        Path images = dump(SimulatedGpuProcess.bos(new Random(5)), ENV);
        new AmdgpuImages(images).writeDmabuf(9, CriuDmabufNode.newBuilder().setGemHandle(3).build());
        assertEquals(3, new AmdgpuImages(images).readDmabuf(9).getGemHandle());
        refusedAtInit(images, "amdgpu-dmabuf_9.img: a dma-buf fd (criu-dev)");
    }

    private void refusedAtInit(Path images, String line) {
        KfdSimulator.reset();
        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = SimulatedGpuProcess.restorePlugin(dir, ENV);
        assertEquals(-Errno.ENOTSUP, plugin.init(Stage.RESTORE, criu));
        assertTrue(criu.lines().stream().anyMatch(l -> l.contains(line)), criu.lines().toString());
        assertFalse(criu.hasChildExecutor());
        plugin.exit(Stage.RESTORE, 1);
    }

    private static void replace(Path images, String name, byte[] payload) {
        try {
            Files.delete(images.resolve(name));
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        FramedFile.write(images, name, payload);
    }
}

package dev.criugpu.amdgpu.dump;

import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.testing.SysfsTree;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;

import static dev.criugpu.amdgpu.dump.DeviceClassifier.Kind.KFD;
import static dev.criugpu.amdgpu.dump.DeviceClassifier.Kind.OTHER;
import static dev.criugpu.amdgpu.dump.DeviceClassifier.Kind.RENDER_NODE;
import static dev.criugpu.amdgpu.dump.DeviceNumbers.makedev;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Device classification, render-node images and KFD_MAX_BUFFER_SIZE. */
class DeviceFilesTest {
    @TempDir
    Path dir;

    private static final DeviceClassifier AMD =
            new DeviceClassifier(OptionalLong.of(makedev(235, 0)), OptionalLong.of(makedev(226, 128)));

    @Test
    void deviceNumbersUseGlibcEncoding() {
        assertEquals(0xE280L, makedev(226, 128));
        long big = makedev(0x1234, 0x56789);
        assertEquals(0x1234, DeviceNumbers.major(big));
        assertEquals(0x56789, DeviceNumbers.minor(big));
        // /dev/null is 1:3 on every Linux system: the classifier reads real device numbers.
        assertEquals(OptionalLong.of(makedev(1, 3)), DeviceClassifier.rdev(Path.of("/dev/null")));
        assertTrue(DeviceClassifier.rdev(dir.resolve("absent")).isEmpty());
    }

    @Test
    void filesAreKfdOnlyWithMinorZeroAndRenderNodesInRange() {
        assertEquals(KFD, AMD.classifyFile(makedev(235, 0)));
        assertEquals(OTHER, AMD.classifyFile(makedev(235, 1)));
        assertEquals(RENDER_NODE, AMD.classifyFile(makedev(226, 128)));
        assertEquals(RENDER_NODE, AMD.classifyFile(makedev(226, 255)));
        assertEquals(OTHER, AMD.classifyFile(makedev(226, 0)), "card0 is a primary node, not a render node");
        assertEquals(OTHER, AMD.classifyFile(makedev(195, 0)), "an NVIDIA device is left to other plugins");
    }

    @Test
    void vmasOfAnyKfdMinorAreKfd() {
        assertEquals(KFD, AMD.classifyVma(makedev(235, 7)));
        assertEquals(RENDER_NODE, AMD.classifyVma(makedev(226, 130)));
        assertEquals(OTHER, AMD.classifyVma(makedev(226, 256)));
    }

    @Test
    void hostWithoutAmdDevicesClassifiesNothing() {
        DeviceClassifier none = DeviceClassifier.of(dir.resolve("kfd"), dir.resolve("renderD128"));
        assertEquals(OTHER, none.classifyFile(makedev(235, 0)));
        assertEquals(OTHER, none.classifyVma(makedev(226, 128)));
    }

    private Topology oneGpu() {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 0x1001); // render minor 128
        t.connect(SysfsTree.PCIE, 0, 1);
        return new SysfsTopologyReader(t.write(dir.resolve("sysfs"))).read("Checkpoint");
    }

    @Test
    void renderNodeImageHoldsTheUserGpuId() {
        AmdgpuImages images = new AmdgpuImages(dir);
        new RenderNodeDumper(images, oneGpu(), () -> Map.of(0x1001, 0xa001)).dump(128, 11);
        assertEquals(0xa001, images.readRenderNode(11).getGpuId());
    }

    @Test
    void renderNodeBeforeItsKfdIsRewrittenOnceTheKfdDumpMapsItsGpu() {
        AmdgpuImages images = new AmdgpuImages(dir);
        Map<Integer, Integer> maps = new HashMap<>();
        RenderNodeDumper dumper = new RenderNodeDumper(images, oneGpu(), () -> maps);
        dumper.dump(128, 11);
        assertEquals(0x1001, images.readRenderNode(11).getGpuId(), "written with the actual id until a KFD dump says");
        dumper.reconcile();
        assertEquals(0x1001, images.readRenderNode(11).getGpuId());
        maps.put(0x1001, 0xa001); // the process was restored here from a GPU it knew as 0xa001
        dumper.reconcile();
        assertEquals(0xa001, images.readRenderNode(11).getGpuId());
    }

    @Test
    void renderNodeOutsideTheTopologyFails() {
        AmdgpuImages images = new AmdgpuImages(dir);
        CriuException unknown = assertThrows(CriuException.class,
                () -> new RenderNodeDumper(images, oneGpu(), () -> Map.of(0x1001, 1)).dump(131, 12));
        assertEquals(Errno.ENODEV, unknown.errno());
        assertEquals("renderD131 is not a GPU of the KFD topology", unknown.getMessage());
    }

    @Test
    void maxBufferSizeFollowsStrtoulAndSuffixes() {
        assertEquals(0, MaxBufferSize.fromEnvironment(Map.of()));
        assertEquals(4096, MaxBufferSize.parse("4096"));
        assertEquals(0x1000, MaxBufferSize.parse("0x1000"));
        assertEquals(8, MaxBufferSize.parse("010"));
        assertEquals(64L << 10, MaxBufferSize.parse("64k"));
        assertEquals(64L << 10, MaxBufferSize.parse("64K"));
        assertEquals(2L << 20, MaxBufferSize.parse("2M"));
        assertEquals(1L << 30, MaxBufferSize.parse("1G"));
        assertEquals(0x10L << 20, MaxBufferSize.parse("0x10M"));
        for (String bad : new String[]{"2m", "1g", "lots", "", "12T"}) {
            CriuException e = assertThrows(CriuException.class, () -> MaxBufferSize.parse(bad), bad);
            assertTrue(e.getMessage().startsWith("KFD_MAX_BUFFER_SIZE=" + bad + " is not a size"), e.getMessage());
        }
        assertEquals(100, MaxBufferSize.bufferFor(0, 100));
        assertEquals(64, MaxBufferSize.bufferFor(64, 100));
        assertEquals(100, MaxBufferSize.bufferFor(4096, 100));
    }
}

package dev.criugpu.amdgpu.restore;

import com.google.protobuf.ByteString;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.DeviceEntries;
import dev.criugpu.amdgpu.images.FramedFile;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.testing.SysfsTree;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.GTT;
import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.VRAM;
import static dev.criugpu.amdgpu.testing.SysfsTree.GiB;
import static dev.criugpu.amdgpu.testing.SysfsTree.PCIE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Sizes read from a KFD image size the restore's pages files, copies and buffers: a size that is no size, sizes that
 * overflow when added up, and VRAM BOs larger than the local GPU's VRAM are refused with one line naming the file.
 */
class ImageSizeChecksTest {
    @TempDir
    Path dir;

    private Topology oneGpu(long vramBytes) {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 0x1001).vram(vramBytes, true);
        t.connect(PCIE, 0, 1);
        return new SysfsTopologyReader(t.write(dir.resolve("sysfs-" + vramBytes))).read("Local");
    }

    private CriuKfd kfd(Topology topology, long... vramBoSizes) {
        CriuKfd.Builder b = CriuKfd.newBuilder().setPid(42).setNumOfGpus(1).setNumOfCpus(1)
                .addAllDeviceEntries(DeviceEntries.fromTopology(topology, actual -> actual))
                .setNumOfBos(vramBoSizes.length + 1).setNumOfObjects(1).setSharedMemSize(0).setSharedMemMagic(0)
                .setPrivData(ByteString.copyFromUtf8("opaque"));
        long addr = 0x7f0000000000L;
        for (long size : vramBoSizes) {
            b.addBoEntries(KfdBoEntry.newBuilder().setAddr(addr).setSize(size).setOffset(addr).setAllocFlags(VRAM)
                    .setGpuId(0x1001));
            addr += 1L << 40;
        }
        return b.addBoEntries(KfdBoEntry.newBuilder().setAddr(addr).setSize(4096).setOffset(addr).setAllocFlags(GTT)
                .setGpuId(0x1001)).build();
    }

    /** Writes the image as a corrupt one would be: without the writer's own checks. */
    private AmdgpuImages images(CriuKfd kfd) throws Exception {
        Path images = Files.createDirectories(dir.resolve("images"));
        FramedFile.write(images, "amdgpu-kfd-5.img", kfd.toByteArray());
        return new AmdgpuImages(images);
    }

    @Test
    void aBoSizeOf2To63BytesOrMoreIsNoSize() throws Exception {
        AmdgpuImages images = images(kfd(oneGpu(32 * GiB), 1L << 63));
        CriuException e = assertThrows(CriuException.class, () -> images.readKfd(5));
        assertEquals(Errno.EINVAL, e.errno());
        assertEquals("amdgpu-kfd-5.img: BO at 0x7f0000000000 has size 9223372036854775808, not a size", e.getMessage());
    }

    @Test
    void boSizesThatOverflowWhenAddedUpAreRefused() throws Exception {
        AmdgpuImages images = images(kfd(oneGpu(32 * GiB), Long.MAX_VALUE - 4096, 8192));
        CriuException e = assertThrows(CriuException.class, () -> images.readKfd(5));
        assertEquals("amdgpu-kfd-5.img: the VRAM/GTT BOs of GPU 0x1001 add up to 2^63 bytes or more", e.getMessage());
    }

    @Test
    void vramBosLargerThanTheLocalGpusVramRefuseTheRestoreBeforeAnythingIsForked() throws Exception {
        Topology small = oneGpu(8 * GiB);
        AmdgpuImages images = images(kfd(small, 6 * GiB, 3 * GiB));
        CriuException e = assertThrows(CriuException.class,
                () -> RestorePlan.build(images, small, Map.of(), x -> { }, file -> 0));
        assertEquals(Errno.ENOSPC, e.errno());
        assertEquals("amdgpu-kfd-5.img: the VRAM BOs of GPU 0x1001 hold 9663676416 bytes, more than the 8589934592"
                + " bytes of VRAM of local GPU 0x1001", e.getMessage());
    }
}

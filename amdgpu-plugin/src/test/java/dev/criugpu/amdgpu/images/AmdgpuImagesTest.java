package dev.criugpu.amdgpu.images;

import com.google.protobuf.ByteString;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.testing.SysfsTree;
import dev.criugpu.amdgpu.topology.KfdNode;
import dev.criugpu.amdgpu.topology.NodeProperty;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static dev.criugpu.amdgpu.testing.SysfsTree.PCIE;
import static dev.criugpu.amdgpu.testing.SysfsTree.XGMI;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AmdgpuImagesTest {
    @TempDir
    Path dir;

    private Topology twoGpuHiveSystem() {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 0x1111).prop("hive_id", 0x8000_0000_0000_0001L).prop("cpu_cores_count", 4); // an APU
        t.gpu(2, 0x2222).prop("hive_id", 0x8000_0000_0000_0001L);
        t.connect(PCIE, 0, 1).connect(PCIE, 0, 2).connect(XGMI, 1, 2);
        t.node(1).link(XGMI, 9); // to a hidden node: not stored in the image
        return new SysfsTopologyReader(t.write(dir.resolve("sysfs"))).read("Local");
    }

    private CriuKfd.Builder kfd(Topology topo) {
        CriuKfd.Builder b = CriuKfd.newBuilder().setPid(42).setNumOfGpus(2).setNumOfCpus(1)
                .addAllDeviceEntries(DeviceEntries.fromTopology(topo, actual -> actual + 1))
                .setNumOfBos(2)
                .addBoEntries(KfdBoEntry.newBuilder().setAddr(0x7f0000000000L).setSize(1 << 21).setOffset(0x1000)
                        .setAllocFlags(0x80000001).setGpuId(0x1112))
                .addBoEntries(KfdBoEntry.newBuilder().setAddr(0x7f0000200000L).setSize(4096).setOffset(0x2000)
                        .setAllocFlags(0x2).setGpuId(0x2223))
                .setNumOfObjects(3).setSharedMemSize(0).setSharedMemMagic(0)
                .setPrivData(ByteString.copyFromUtf8("opaque-kfd-blob"));
        return b;
    }

    private static CriuException error(Runnable r) {
        return assertThrows(CriuException.class, r::run);
    }

    @Test
    void kfdImageRoundTripsWithTheTopology() throws Exception {
        Topology local = twoGpuHiveSystem();
        AmdgpuImages images = new AmdgpuImages(dir);
        CriuKfd written = kfd(local).build();
        images.writeKfd(3, written);

        assertTrue(images.hasKfd(3));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("amdgpu-kfd-3.img"))));
        CriuKfd read = images.readKfd(3);
        assertEquals(written, read);

        Topology back = DeviceEntries.toTopology(read.getDeviceEntriesList());
        assertEquals(3, back.nodes().size());
        for (KfdNode orig : local.nodes()) {
            KfdNode n = back.node(orig.nodeId()).orElseThrow();
            assertEquals(orig.isCpu(), n.isCpu());
            assertEquals(orig.isGpu() ? orig.gpuId() + 1 : 0, n.gpuId(), "user gpu id stored");
            assertEquals(local.validLinks(orig), n.links(), "only valid links stored");
            if (orig.isGpu()) {
                assertEquals(0, n.get(NodeProperty.CPU_CORES_COUNT), "a GPU entry has no CPU cores, or restore takes it for a CPU");
                var expected = new java.util.EnumMap<>(orig.properties());
                expected.put(NodeProperty.CPU_CORES_COUNT, 0L);
                expected.keySet().retainAll(n.properties().keySet());
                var got = new java.util.EnumMap<>(n.properties());
                got.keySet().retainAll(orig.properties().keySet());
                assertEquals(expected, got);
            }
        }
        assertEquals(1, back.hives().size());
    }

    @Test
    void rewritingAShorterImageLeavesNoStaleTail() {
        AmdgpuImages images = new AmdgpuImages(dir);
        images.writeKfd(3, kfd(twoGpuHiveSystem()).build());
        CriuKfd small = kfd(twoGpuHiveSystem()).setPrivData(ByteString.EMPTY).build();
        images.writeKfd(3, small);
        assertEquals(small, images.readKfd(3));
    }

    @Test
    void missingFileIsNamed() {
        CriuException e = error(() -> new AmdgpuImages(dir).readKfd(9));
        assertEquals(Errno.ENOENT, e.errno());
        assertTrue(e.getMessage().startsWith("amdgpu-kfd-9.img: no such file"), e.getMessage());
    }

    @Test
    void truncatedHeaderIsRejected() throws Exception {
        Files.write(dir.resolve("amdgpu-kfd-1.img"), new byte[]{1, 0, 0});
        assertTrue(error(() -> new AmdgpuImages(dir).readKfd(1)).getMessage()
                .equals("amdgpu-kfd-1.img: truncated: 3 bytes, shorter than the 8-byte length header"));
    }

    @Test
    void lengthHeaderDisagreeingWithTheFileIsRejected() throws Exception {
        byte[] payload = kfd(twoGpuHiveSystem()).build().toByteArray();
        ByteBuffer b = ByteBuffer.allocate(8 + payload.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(payload.length + 5).put(payload);
        Files.write(dir.resolve("amdgpu-kfd-1.img"), b.array());
        String msg = error(() -> new AmdgpuImages(dir).readKfd(1)).getMessage();
        assertEquals("amdgpu-kfd-1.img: length header says " + (payload.length + 5) + " bytes but " + payload.length + " follow", msg);
    }

    @Test
    void garbagePayloadIsRejected() {
        FramedFile.write(dir, "amdgpu-kfd-1.img", "not protobuf at all".getBytes(StandardCharsets.US_ASCII));
        CriuException e = error(() -> new AmdgpuImages(dir).readKfd(1));
        assertEquals(Errno.EINVAL, e.errno());
        assertTrue(e.getMessage().startsWith("amdgpu-kfd-1.img: not a criu_kfd message"), e.getMessage());
    }

    @Test
    void missingRequiredFieldIsRejected() {
        FramedFile.write(dir, "amdgpu-kfd-1.img", CriuKfd.newBuilder().setPid(1).buildPartial().toByteArray());
        String msg = error(() -> new AmdgpuImages(dir).readKfd(1)).getMessage();
        assertTrue(msg.startsWith("amdgpu-kfd-1.img: not a criu_kfd message") && msg.contains("num_of_gpus"), msg);
    }

    @Test
    void countsMustAgreeWithLists() {
        CriuKfd bos = kfd(twoGpuHiveSystem()).setNumOfBos(3).build();
        FramedFile.write(dir, "amdgpu-kfd-1.img", bos.toByteArray());
        assertEquals("amdgpu-kfd-1.img: num_of_bos is 3 but 2 bo entries follow",
                error(() -> new AmdgpuImages(dir).readKfd(1)).getMessage());

        CriuKfd gpus = kfd(twoGpuHiveSystem()).setNumOfGpus(1).setNumOfCpus(2).build();
        FramedFile.write(dir, "amdgpu-kfd-2.img", gpus.toByteArray());
        assertEquals("amdgpu-kfd-2.img: num_of_gpus is 1 but 2 device entries are GPUs",
                error(() -> new AmdgpuImages(dir).readKfd(2)).getMessage());

        CriuKfd orphan = kfd(twoGpuHiveSystem()).setBoEntries(1, KfdBoEntry.newBuilder().setAddr(0x1000).setSize(4096)
                .setOffset(0).setAllocFlags(1).setGpuId(0x7777)).build();
        FramedFile.write(dir, "amdgpu-kfd-3.img", orphan.toByteArray());
        assertEquals("amdgpu-kfd-3.img: BO at 0x1000 belongs to GPU 0x7777, which has no device entry",
                error(() -> new AmdgpuImages(dir).readKfd(3)).getMessage());
    }

    @Test
    void criuDevHandlesComeOnEveryBoOrOnNone() {
        CriuKfd.Builder b = kfd(twoGpuHiveSystem());
        b.setBoEntries(0, b.getBoEntries(0).toBuilder().setHandle(7));
        FramedFile.write(dir, "amdgpu-kfd-5.img", b.build().toByteArray());
        assertEquals("amdgpu-kfd-5.img: 1 of 2 bo entries have criu-dev's handle field; criu-dev writes it on every entry",
                error(() -> new AmdgpuImages(dir).readKfd(5)).getMessage());
        b.setBoEntries(1, b.getBoEntries(1).toBuilder().setHandle(ImageFormat.NO_HANDLE));
        FramedFile.write(dir, "amdgpu-kfd-6.img", b.build().toByteArray());
        assertEquals(ImageFormat.CRIU_DEV, AmdgpuImages.formatOf(new AmdgpuImages(dir).readKfd(6)));
    }

    @Test
    void writerRefusesAnInconsistentMessageAndWritesNothing() {
        CriuKfd bad = kfd(twoGpuHiveSystem()).setNumOfBos(5).build();
        error(() -> new AmdgpuImages(dir).writeKfd(4, bad));
        assertTrue(!Files.exists(dir.resolve("amdgpu-kfd-4.img")));
    }

    @Test
    void pagesFileRoundTripsAndChecksItsTotal() throws Exception {
        String name = ImageNames.pages(3, 0x1112);
        byte[] a = new byte[8192];
        byte[] b = new byte[4096];
        for (int i = 0; i < a.length; i++) a[i] = (byte) i;
        for (int i = 0; i < b.length; i++) b[i] = (byte) (255 - i);
        try (PagesFileWriter w = new PagesFileWriter(dir, name, a.length + b.length)) {
            w.write(ByteBuffer.wrap(a));
            w.write(ByteBuffer.wrap(b));
        }
        assertEquals(8 + a.length + b.length, Files.size(dir.resolve(name)));
        try (PagesFileReader r = new PagesFileReader(dir, name, a.length + b.length)) {
            ByteBuffer got = ByteBuffer.allocate(b.length);
            r.readFully(a.length, got);
            assertArrayEquals(b, got.array());
            assertTrue(error(() -> r.readFully(a.length, ByteBuffer.allocate(b.length + 1))).getMessage().contains("outside"));
        }
        String msg = error(() -> new PagesFileReader(dir, name, a.length)).getMessage();
        assertEquals(name + ": holds 12288 bytes but the KFD image's BOs need 8192", msg);
    }

    @Test
    void shortPagesWriteFailsOnCloseAndOverlongWriteFailsAtOnce() {
        String name = ImageNames.pages(3, 1);
        PagesFileWriter w = new PagesFileWriter(dir, name, 100);
        w.write(ByteBuffer.allocate(60));
        assertTrue(error(() -> w.write(ByteBuffer.allocate(41))).getMessage().contains("exceed the announced 100"));
        assertEquals(name + ": wrote 60 of 100 bytes", error(w::close).getMessage());
        assertFalse(Files.exists(dir.resolve(name)), "a short file never gets the real name");
        assertFalse(Files.exists(dir.resolve(name + ".partial")), "the temporary file is removed");
    }

    @Test
    void pagesFileAppearsOnlyWhenComplete() {
        String name = ImageNames.pages(4, 2);
        try (PagesFileWriter w = new PagesFileWriter(dir, name, 10)) {
            w.write(ByteBuffer.allocate(10));
            assertFalse(Files.exists(dir.resolve(name)), "not visible before close");
        }
        assertTrue(Files.exists(dir.resolve(name)));
        PagesFileWriter aborted = new PagesFileWriter(dir, ImageNames.pages(4, 3), 10);
        aborted.write(ByteBuffer.allocate(10));
        aborted.abort();
        aborted.close();
        assertFalse(Files.exists(dir.resolve(ImageNames.pages(4, 3))));
    }
}

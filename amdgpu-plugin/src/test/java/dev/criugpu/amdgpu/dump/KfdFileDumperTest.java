package dev.criugpu.amdgpu.dump;

import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.DeviceEntries;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.TwoGpuHost;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.Syscalls;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The dump path PROCESS_INFO → CHECKPOINT → image → UNPAUSE against the simulated KFD. */
class KfdFileDumperTest {
    private static final int VRAM = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM();
    private static final int GTT = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_GTT();
    private static final int DOORBELL = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL();
    private static final int WRITABLE = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE();
    private static final int OWNER = 4242; // a target process: only its tracer thread may dump it

    @TempDir
    Path dir;

    private final Syscalls sys = KfdSimulator.syscalls();
    private Topology topology;
    private AmdgpuImages images;

    @BeforeEach
    void setUp() throws Exception {
        TwoGpuHost host = TwoGpuHost.create(dir);
        topology = host.topology();
        images = host.images();
    }

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
    }

    /** The target as the dumper sees it after PTRACE_SEIZE from this thread; user ids differ from actual ones. */
    private int target(int tracerTid) {
        int fd = KfdSimulator.createProcess(OWNER, tracerTid);
        KfdSimulator.addGpu(fd, 0x1001, 0xa001);
        KfdSimulator.addGpu(fd, 0x1002, 0xa002);
        KfdSimulator.addBo(fd, 0x7f00_0000_0000L, 1 << 20, 0xa001, VRAM | WRITABLE, 1);
        KfdSimulator.addBo(fd, 0x7f00_0010_0000L, 8192, 0xa002, GTT, 2);
        KfdSimulator.addBo(fd, 0x7f00_0020_0000L, 4096, 0xa001, DOORBELL, 0);
        KfdSimulator.setObjects(fd, 5, "queues+events".getBytes(StandardCharsets.US_ASCII));
        return fd;
    }

    private KfdFileDumper dumper() {
        return new KfdFileDumper(sys, images, topology, dir.resolve("no-hsakmt-shm"), 0);
    }

    private static long openFds() throws Exception {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    @Test
    void dumpWritesTheKfdImageAndUnpauses() throws Exception {
        int fd = target(KfdSimulator.gettid());
        long fdsBefore = openFds();
        KfdFileDumper d = dumper();
        CriuKfd written = d.dump(fd, 7);

        assertFalse(KfdSimulator.paused(fd), "queues restarted after the dump");
        assertEquals(fdsBefore, openFds(), "dma-buf fds from CHECKPOINT closed");
        CriuKfd read = images.readKfd(7);
        assertEquals(written, read);
        assertEquals(OWNER, read.getPid());
        assertEquals(2, read.getNumOfGpus());
        assertEquals(1, read.getNumOfCpus());
        assertEquals(5, read.getNumOfObjects());
        assertArrayEquals("queues+events".getBytes(StandardCharsets.US_ASCII), read.getPrivData().toByteArray());
        assertEquals(List.of(0xa001, 0xa002, 0x7f00_0000_0000L, 0x7f00_0010_0000L, 0x7f00_0020_0000L),
                List.of(read.getBoEntries(0).getGpuId(), read.getBoEntries(1).getGpuId(), read.getBoEntries(0).getAddr(),
                        read.getBoEntries(1).getAddr(), read.getBoEntries(2).getAddr()));
        assertEquals(VRAM | WRITABLE, read.getBoEntries(0).getAllocFlags());
        assertTrue(read.getBoEntriesList().stream().map(KfdBoEntry::getOffset).distinct().count() == 3);
        // Device entries carry the user ids, so a restore maps them, not this host's ids.
        Topology saved = DeviceEntries.toTopology(read.getDeviceEntriesList());
        assertEquals(List.of(0xa001, 0xa002), saved.gpus().stream().map(n -> n.gpuId()).sorted().toList(), "node order is sysfs directory order");
        assertEquals(java.util.Map.of(0x1001, 0xa001, 0x1002, 0xa002), d.checkpointMaps());
        assertEquals(0, read.getSharedMemSize());
    }

    @Test
    void hsakmtSharedMemoryIsRecorded() throws Exception {
        Path shm = dir.resolve("hsakmt_shared_mem");
        byte[] content = new byte[4096];
        content[0] = 0x78;
        content[1] = 0x56;
        content[2] = 0x34;
        content[3] = 0x12;
        Files.write(shm, content);
        int fd = target(KfdSimulator.gettid());
        CriuKfd k = new KfdFileDumper(sys, images, topology, shm, 0).dump(fd, 1);
        assertEquals(4096, k.getSharedMemSize());
        assertEquals(0x12345678, k.getSharedMemMagic());
    }

    @Test
    void dumpFromAThreadThatDidNotSeizeTheTaskIsRefused() throws Exception {
        int fd = target(KfdSimulator.gettid()); // seized by this thread
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> CompletableFuture.supplyAsync(() -> dumper().dump(fd, 2), other).get());
            CriuException c = assertInstanceOf(CriuException.class, e.getCause());
            assertEquals(Errno.EBADF, c.errno());
            assertTrue(c.getMessage().contains("KFD CRIU PROCESS_INFO on fd " + fd + " failed: EBADF"), c.getMessage());
        } finally {
            other.shutdownNow();
        }
        assertFalse(KfdSimulator.paused(fd));
        assertFalse(images.hasKfd(2));
    }

    @Test
    void oldKfdWithoutCriuSupportIsNotSupported() {
        int fd = target(KfdSimulator.gettid());
        KfdSimulator.setVersionMinor(7);
        CriuException e = assertThrows(CriuException.class, () -> dumper().dump(fd, 3));
        assertEquals(Errno.ENOTSUP, e.errno());
        assertEquals("KFD ioctl API 1.7 lacks CRIU support (need 1.8 or newer)", e.getMessage());
        assertFalse(KfdSimulator.paused(fd));
    }

    @Test
    void processUsingOneOfTwoVisibleGpusIsDumpedWithThatGpuOnly() {
        int fd = KfdSimulator.createProcess(OWNER, KfdSimulator.gettid());
        KfdSimulator.addGpu(fd, 0x1002, 0x1002);
        KfdSimulator.addBo(fd, 0x7f00_0000_0000L, 8192, 0x1002, VRAM, 9);
        CriuKfd image = dumper().dump(fd, 4);
        assertEquals(1, image.getNumOfGpus());
        assertEquals(1, image.getNumOfCpus());
        assertEquals(List.of(0, 0x1002), image.getDeviceEntriesList().stream().map(e -> e.getGpuId()).sorted().toList());
        assertEquals(List.of(0, 2), image.getDeviceEntriesList().stream().map(e -> e.getNodeId()).sorted().toList(),
                "the CPU and the used GPU's node; the unused GPU (node 1) is left out");
        assertTrue(Files.exists(images.dir().resolve("amdgpu-pages-4-1002.img")));
        assertFalse(Files.exists(images.dir().resolve("amdgpu-pages-4-1001.img")), "nothing for the unused GPU");
        assertFalse(KfdSimulator.paused(fd));
    }

    @Test
    void processOnAGpuOutsideTheTopologyFailsAndStillUnpauses() {
        int fd = KfdSimulator.createProcess(OWNER, KfdSimulator.gettid());
        KfdSimulator.addGpu(fd, 0x1001, 0x1001);
        KfdSimulator.addGpu(fd, 0x1fff, 0x1fff);
        long fdsBefore;
        try {
            fdsBefore = openFds();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        CriuException e = assertThrows(CriuException.class, () -> dumper().dump(fd, 4));
        assertEquals("pid 4242 uses GPU 0x1fff, which the KFD topology (Checkpoint) does not show", e.getMessage());
        assertFalse(KfdSimulator.paused(fd), "a failed dump restarts the queues");
        assertFalse(images.hasKfd(4));
        try {
            assertEquals(fdsBefore, openFds());
        } catch (Exception ex) {
            throw new AssertionError(ex);
        }
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"GET_VERSION", "PROCESS_INFO", "CHECKPOINT", "UNPAUSE"})
    void anIoctlFailingAtEachStepFailsTheDumpWithOneLineAndNoImage(String step) throws Exception {
        int fd = target(KfdSimulator.gettid());
        int op = switch (step) {
            case "GET_VERSION" -> KfdSimulator.GET_VERSION;
            case "PROCESS_INFO" -> kfd_ioctl_h.KFD_CRIU_OP_PROCESS_INFO();
            case "CHECKPOINT" -> kfd_ioctl_h.KFD_CRIU_OP_CHECKPOINT();
            default -> kfd_ioctl_h.KFD_CRIU_OP_UNPAUSE();
        };
        long fdsBefore = openFds();
        KfdSimulator.failIoctl(op, Errno.EIO);
        CriuException e = assertThrows(CriuException.class, () -> dumper().dump(fd, 4));
        assertTrue(e.getMessage().contains(step) && e.getMessage().endsWith("failed: EIO (errno 5)")
                && !e.getMessage().contains("\n"), e.getMessage());
        assertEquals(step.equals("UNPAUSE"), KfdSimulator.paused(fd), "queues restarted unless UNPAUSE itself failed");
        if (!step.equals("UNPAUSE")) assertFalse(images.hasKfd(4), "no image from a failed dump");
        assertEquals(fdsBefore, openFds(), "every fd of the attempt closed");
    }
}

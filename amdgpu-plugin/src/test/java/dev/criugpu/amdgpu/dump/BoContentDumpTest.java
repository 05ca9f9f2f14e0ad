package dev.criugpu.amdgpu.dump;

import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.images.PagesFileReader;
import dev.criugpu.amdgpu.testing.KfdSimulator.DrmFault;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.TwoGpuHost;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.ThreadSignals;
import dev.criugpu.api.bindings.signal_h;
import dev.criugpu.api.sys.Syscalls;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * VRAM/GTT contents copied into the pages files through the libdrm SDMA path, against the simulated KFD and the
 * simulated libdrm_amdgpu (which executes the linear-copy packets between the simulated buffers).
 */
class BoContentDumpTest {
    private static final int VRAM = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM();
    private static final int GTT = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_GTT();
    private static final int DOORBELL = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL();
    private static final int USERPTR = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR();
    private static final int WRITABLE = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE();
    private static final int OWNER = 4343;
    private static final int MIB = 1 << 20;
    private static final int FILE_ID = 9;
    private static final int MINOR_A = 128; // renderD128: topology node 1, gpu 0x1001, user id 0xa001
    private static final int MINOR_B = 129; // renderD129: topology node 2, gpu 0x1002, user id 0xa002

    @TempDir
    Path dir;

    private final Syscalls sys = KfdSimulator.syscalls();
    private Topology topology;
    private AmdgpuImages images;
    private byte[] gpuA;
    private byte[] gpuB;
    private int kfd;

    @BeforeEach
    void setUp() throws Exception {
        TwoGpuHost host = TwoGpuHost.create(dir);
        topology = host.topology();
        images = host.images();
        kfd = target();
    }

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
    }

    /**
     * BOs interleaved across the GPUs; the 6 MiB one needs several 2 MiB packets; doorbell and userptr BOs have
     * no contents to copy. The expected pages payloads are the random contents in bucket order.
     */
    private int target() {
        int fd = KfdSimulator.createProcess(OWNER, KfdSimulator.gettid());
        KfdSimulator.addGpu(fd, 0x1001, 0xa001);
        KfdSimulator.addGpu(fd, 0x1002, 0xa002);
        Random r = new Random(0x5d3a);
        ByteArrayOutputStream a = new ByteArrayOutputStream();
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        Object[][] bos = {
                {0x7f00_0000_0000L, 3 * MIB, 0xa001, VRAM | WRITABLE, a},
                {0x7f00_0100_0000L, 6 * MIB, 0xa002, VRAM | WRITABLE, b},
                {0x7f00_0200_0000L, 4096, 0xa001, DOORBELL, null},
                {0x7f00_0300_0000L, MIB + 5 * 4096, 0xa001, GTT, a},
                {0x7f00_0400_0000L, 8192, 0xa002, USERPTR, null},
                {0x7f00_0500_0000L, 64 * 1024, 0xa002, GTT | WRITABLE, b},
        };
        for (int i = 0; i < bos.length; i++) {
            Object[] bo = bos[i];
            KfdSimulator.addBo(fd, (long) bo[0], (int) bo[1], (int) bo[2], (int) bo[3], 0);
            if (bo[4] != null) {
                byte[] data = new byte[(int) bo[1]];
                r.nextBytes(data);
                KfdSimulator.fillBo(fd, i, data);
                ((ByteArrayOutputStream) bo[4]).writeBytes(data);
            }
        }
        gpuA = a.toByteArray();
        gpuB = b.toByteArray();
        return fd;
    }

    private KfdFileDumper dumper(long maxBufferSize) {
        return new KfdFileDumper(sys, images, topology, dir.resolve("no-hsakmt-shm"), maxBufferSize);
    }

    private byte[] pages(int userGpuId, long expected) {
        try (PagesFileReader r = new PagesFileReader(images.dir(), ImageNames.pages(FILE_ID, userGpuId), expected)) {
            ByteBuffer all = ByteBuffer.allocate((int) r.total());
            r.readFully(0, all);
            return all.array();
        }
    }

    private static long openFds() throws Exception {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    private List<String> imageFiles() throws Exception {
        try (var s = Files.list(images.dir())) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void contentsOfTwoGpusAreCopiedBitIdenticalInBucketOrder() throws Exception {
        long fdsBefore = openFds();
        dumper(0).dump(kfd, FILE_ID);

        assertArrayEquals(gpuA, pages(0xa001, gpuA.length));
        assertArrayEquals(gpuB, pages(0xa002, gpuB.length));
        // No cap: the bounce buffer holds the largest BO, so each BO is one submission.
        assertEquals(2, KfdSimulator.drmSubmits(MINOR_A));
        assertEquals(2, KfdSimulator.drmSubmits(MINOR_B));
        assertFalse(KfdSimulator.paused(kfd));
        assertEquals(0, KfdSimulator.drmLive(), "every libdrm object freed");
        assertEquals(fdsBefore, openFds(), "render and dma-buf fds closed");
        assertEquals(List.of(ImageNames.kfd(FILE_ID), ImageNames.pages(FILE_ID, 0xa001), ImageNames.pages(FILE_ID, 0xa002)),
                imageFiles());
    }

    @Test
    void maxBufferSizeBoundsEachSubmission() {
        dumper(MIB).dump(kfd, FILE_ID);

        assertArrayEquals(gpuA, pages(0xa001, gpuA.length));
        assertArrayEquals(gpuB, pages(0xa002, gpuB.length));
        assertEquals(3 + 2, KfdSimulator.drmSubmits(MINOR_A), "3 MiB + (1 MiB + 5 pages) in 1 MiB buffer-fulls");
        assertEquals(6 + 1, KfdSimulator.drmSubmits(MINOR_B));
        assertEquals(0, KfdSimulator.drmLive());
    }

    @Test
    void bufferCapThatIsNoPageMultipleIsRoundedDown() {
        dumper(MIB + 100).dump(kfd, FILE_ID);
        assertArrayEquals(gpuB, pages(0xa002, gpuB.length));
        assertEquals(6 + 1, KfdSimulator.drmSubmits(MINOR_B));
    }

    @Test
    void hungCopyFailsNamingTheBoAndLeavesNoPagesFile() throws Exception {
        long fdsBefore = openFds();
        KfdSimulator.drmFault(MINOR_B, 1, DrmFault.FENCE_HANGS);
        CriuException e = assertThrows(CriuException.class, () -> dumper(MIB).dump(kfd, FILE_ID));

        assertEquals(Errno.ETIMEDOUT, e.errno());
        assertEquals("amdgpu-pages-9-a002.img: copy of BO 0 at 0x7f0001000000 (6291456 bytes) on GPU 0xa002"
                + " (renderD129) failed: SDMA fence did not signal (bytes 1048576..2097152)", e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
        assertEquals(List.of(), imageFiles(), "no pages file (complete or partial) and no KFD image");
        assertFalse(KfdSimulator.paused(kfd), "the failed dump still unpauses");
        assertEquals(0, KfdSimulator.drmLive());
        assertEquals(fdsBefore, openFds());
    }

    @Test
    void failedSubmissionFailsTheDumpAndStillUnpauses() throws Exception {
        KfdSimulator.drmFault(MINOR_A, 0, DrmFault.SUBMIT_FAILS);
        CriuException e = assertThrows(CriuException.class, () -> dumper(0).dump(kfd, FILE_ID));

        assertEquals(Errno.EIO, e.errno());
        assertEquals("amdgpu-pages-9-a001.img: copy of BO 0 at 0x7f0000000000 (3145728 bytes) on GPU 0xa001"
                + " (renderD128) failed: SDMA submit (bytes 0..3145728) failed: EIO (errno 5)", e.getMessage());
        assertEquals(List.of(), imageFiles());
        assertFalse(KfdSimulator.paused(kfd));
        assertEquals(0, KfdSimulator.drmLive());
    }
    @Test
    void aStopSignalEndsTheWaitForACopyStillRunningAndNoPagesFileIsLeftThatLooksComplete() throws Throwable {
        long fdsBefore = openFds();
        KfdSimulator.drmFault(MINOR_B, 0, DrmFault.FENCE_WAITS); // GPU 0xa002's first copy waits on its fence
        CriuException e;
        // SIGTERM, not SIGINT: a shell starts its background jobs with SIGINT ignored, and an ignored signal stops no wait
        try (ThreadSignals stop = new ThreadSignals(signal_h.SIGTERM)) {
            stop.raiseHere(); // pending on the hook's thread, blocked there as the shim blocks it
            e = assertThrows(CriuException.class, () -> dumper(0).dump(kfd, FILE_ID));
        }
        assertEquals(Errno.EINTR, e.errno());
        assertEquals("criu received SIGTERM while waiting for the SDMA copies of amdgpu-kfd-9.img; stopped waiting so"
                + " that criu can end", e.getMessage());
        assertFalse(KfdSimulator.paused(kfd), "the interrupted dump still unpauses");
        assertEquals(List.of(), imageFiles().stream().filter(f -> !f.endsWith(".partial")).toList(),
                "no KFD image and no pages file under its real name");

        KfdSimulator.drmReleaseFences(); // the copy that outlived the wait ends now: abandoned, not finished
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("amdgpu-sdma-")) t.join();
        }
        assertEquals(List.of(), imageFiles(), "the abandoned copy removed its .partial file");
        assertEquals(0, KfdSimulator.drmLive());
        assertEquals(fdsBefore, openFds(), "each copy thread closed its dma-buf fds");
    }
}

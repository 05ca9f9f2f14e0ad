package dev.criugpu.amdgpu.kfd;

import dev.criugpu.amdgpu.sys.KfdFile;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.Syscalls;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** RESTORE and RESUME through the seam: they act on the calling process, and offsets and fds change. */
class KfdRestoreSeamTest {
    private static final int VRAM = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM();
    private static final int DOORBELL = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL();
    private final Syscalls sys = KfdSimulator.syscalls();

    @BeforeEach
    @AfterEach
    void reset() {
        KfdSimulator.reset();
    }

    private KfdCheckpoint checkpointOfTarget() {
        int fd = KfdSimulator.createProcess(4242, KfdSimulator.gettid());
        KfdSimulator.addGpu(fd, 0x1001, 0xa001);
        KfdSimulator.addBo(fd, 0x7f00_0000_0000L, 8192, 0xa001, VRAM, 9);
        KfdSimulator.addBo(fd, 0x7f00_0010_0000L, 4096, 0xa001, DOORBELL, 0);
        KfdSimulator.setObjects(fd, 2, new byte[]{1, 2, 3});
        KfdFile kfd = new KfdFile(sys, fd);
        KfdCheckpoint cp = kfd.checkpoint(kfd.processInfo());
        kfd.unpause();
        for (BoBucket b : cp.bos()) if (b.hasDmabuf()) sys.close(b.dmabufFd());
        return cp;
    }

    @Test
    void restoreActsOnTheCallerAndGivesNewOffsetsAndDmabufs() {
        KfdCheckpoint cp = checkpointOfTarget();
        int kfdFd = sys.open(KfdFile.DEVICE, Syscalls.O_RDWR | Syscalls.O_CLOEXEC);
        int render = sys.open("/dev/dri/renderD128", Syscalls.O_RDWR | Syscalls.O_CLOEXEC);
        KfdFile kfd = new KfdFile(sys, kfdFd);
        List<BoBucket> restored = kfd.restore(List.of(new DeviceBucket(0xa001, 0x2001, render)), cp.bos(), 2, cp.privData());

        assertEquals(2, restored.size());
        for (int i = 0; i < 2; i++) {
            assertEquals(cp.bos().get(i).addr(), restored.get(i).addr());
            assertNotEquals(cp.bos().get(i).offset(), restored.get(i).restoredOffset(), "offsets change across restore");
        }
        assertTrue(restored.get(0).hasDmabuf());
        assertTrue(!restored.get(1).hasDmabuf(), "doorbells have no dma-buf");
        // The restored BO is mappable at its new offset and is empty until its contents are copied in.
        MemorySegment m = sys.mmap(8192, Syscalls.PROT_READ, render, restored.get(0).restoredOffset());
        assertEquals(0, m.get(ValueLayout.JAVA_BYTE, 100));
        sys.munmap(m);
        sys.close(restored.get(0).dmabufFd());

        assertEquals(0, KfdSimulator.resumed(KfdSimulator.pid()));
        int fresh = sys.open(KfdFile.DEVICE, Syscalls.O_RDWR | Syscalls.O_CLOEXEC);
        new KfdFile(sys, fresh).resume(KfdSimulator.pid());
        sys.close(fresh);
        assertEquals(1, KfdSimulator.resumed(KfdSimulator.pid()));
        sys.close(render);
    }

    @Test
    void restoreNeedsARenderFdOpenInTheCaller() {
        KfdCheckpoint cp = checkpointOfTarget();
        KfdFile kfd = new KfdFile(sys, sys.open(KfdFile.DEVICE, Syscalls.O_RDWR));
        CriuException e = assertThrows(CriuException.class,
                () -> kfd.restore(List.of(new DeviceBucket(0xa001, 0x2001, 999)), cp.bos(), 2, cp.privData()));
        assertEquals(Errno.EBADF, e.errno());
    }

    @Test
    void restoreThroughAnotherProcessesKfdFdIsRefused() {
        KfdCheckpoint cp = checkpointOfTarget();
        int foreign = KfdSimulator.createProcess(4343, KfdSimulator.gettid());
        int render = sys.open("/dev/dri/renderD128", Syscalls.O_RDWR);
        CriuException e = assertThrows(CriuException.class, () -> new KfdFile(sys, foreign)
                .restore(List.of(new DeviceBucket(0xa001, 0x2001, render)), cp.bos(), 2, cp.privData()));
        assertEquals(Errno.EINVAL, e.errno());
        sys.close(render);
    }

    @Test
    void resumeOfAPidWithoutKfdStateIsEsrch() {
        int fresh = sys.open(KfdFile.DEVICE, Syscalls.O_RDWR);
        CriuException e = assertThrows(CriuException.class, () -> new KfdFile(sys, fresh).resume(999_999));
        assertEquals(Errno.ESRCH, e.errno());
        assertTrue(e.getMessage().contains("RESUME of pid 999999"), e.getMessage());
    }

    @Test
    void checkpointWithoutProcessInfoIsRejected() {
        int fd = KfdSimulator.createProcess(4242, KfdSimulator.gettid());
        KfdSimulator.addGpu(fd, 1, 1);
        CriuException e = assertThrows(CriuException.class,
                () -> new KfdFile(sys, fd).checkpoint(new ProcessInfo(4242, 1, 0, 0, 0)));
        assertEquals(Errno.EINVAL, e.errno());
    }
}

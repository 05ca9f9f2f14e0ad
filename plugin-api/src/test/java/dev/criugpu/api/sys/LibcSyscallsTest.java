package dev.criugpu.api.sys;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The production seam binds libc correctly (variadic open/ioctl/sem_open, errno capture). */
class LibcSyscallsTest {
    private final Syscalls libc = Syscalls.libc();

    @TempDir
    Path dir;

    @Test
    void openMissingFileReportsEnoent() {
        SyscallException e = assertThrows(SyscallException.class, () -> libc.open(dir.resolve("none").toString(), Syscalls.O_RDONLY));
        assertEquals(2, e.errno());
        assertEquals("open " + dir.resolve("none") + " failed: ENOENT (errno 2)", e.getMessage());
    }

    @Test
    void deviceIoctlOnANonDeviceFileIsEnottyAndNamesTheCall() {
        int fd = libc.open("/dev/null", Syscalls.O_RDWR | Syscalls.O_CLOEXEC);
        try (Arena arena = Arena.ofConfined()) {
            // AMDKFD_IOC_GET_VERSION: a real device request that /dev/null does not know
            SyscallException e = assertThrows(SyscallException.class,
                    () -> libc.ioctl(fd, 0x80084B01, arena.allocate(8), 3, "GET_VERSION on /dev/null"));
            assertEquals(25, e.errno());
            assertEquals("GET_VERSION on /dev/null failed: ENOTTY (errno 25)", e.getMessage());
        } finally {
            libc.close(fd);
        }
        assertEquals(9, assertThrows(SyscallException.class, () -> libc.close(fd)).errno(), "closed exactly once");
    }

    @Test
    void mmapSharesFileContents() throws Exception {
        Path f = dir.resolve("data");
        Files.write(f, new byte[]{10, 20, 30, 40});
        int fd = libc.open(f.toString(), Syscalls.O_RDWR);
        try {
            MemorySegment m = libc.mmap(4, Syscalls.PROT_READ | Syscalls.PROT_WRITE, fd, 0);
            assertEquals(30, m.get(ValueLayout.JAVA_BYTE, 2));
            m.set(ValueLayout.JAVA_BYTE, 0, (byte) 99);
            libc.munmap(m);
        } finally {
            libc.close(fd);
        }
        assertEquals(99, Files.readAllBytes(f)[0]);
    }

    @Test
    void semaphoreIsCreatedOnceAndOpenedAfterwards() throws Exception {
        String name = "criu-java-gpu-test-" + ProcessHandle.current().pid();
        Path file = Path.of("/dev/shm/sem." + name);
        try {
            libc.openOrCreateSemaphore(name, 0600, 1);
            byte[] created = Files.readAllBytes(file);
            assertEquals(1, created[0], "glibc keeps the value in the first bytes of the semaphore's file");
            libc.openOrCreateSemaphore(name, 0600, 7);
            assertArrayEquals(created, Files.readAllBytes(file), "an existing semaphore is only opened");
        } finally {
            Files.deleteIfExists(file);
        }
        SyscallException e = assertThrows(SyscallException.class, () -> libc.openOrCreateSemaphore("no/such", 0600, 1));
        assertEquals("sem_open no/such failed: EINVAL (errno 22)", e.getMessage());
    }

    @Test
    void kcmpTellsOneOpenFileFromAnother() {
        int self = (int) ProcessHandle.current().pid();
        int a = libc.open("/dev/null", Syscalls.O_RDONLY | Syscalls.O_CLOEXEC);
        int b = libc.open("/dev/null", Syscalls.O_RDONLY | Syscalls.O_CLOEXEC);
        int pidfd = libc.pidfdOpen(self);
        int copy = libc.pidfdGetfd(pidfd, a);
        try {
            assertEquals(0, libc.kcmpFile(self, self, a, copy), "a copy through pidfd_getfd is the same open file");
            assertNotEquals(0, libc.kcmpFile(self, self, a, b), "two opens of one path are two open files");
            assertEquals(9, assertThrows(SyscallException.class, () -> libc.kcmpFile(self, self, a, 99_999)).errno());
        } finally {
            libc.close(copy);
            libc.close(pidfd);
            libc.close(a);
            libc.close(b);
        }
    }

    @Test
    void pidfdGetfdCopiesAnotherProcesssFile() throws Exception {
        // the child holds fd 0 on a pipe whose other end is ours; its copy in this process is the same open file
        Process child = new ProcessBuilder("cat").start();
        try {
            int pid = (int) child.pid();
            int pidfd = libc.pidfdOpen(pid);
            int copy = libc.pidfdGetfd(pidfd, 0);
            try {
                int self = (int) ProcessHandle.current().pid();
                assertEquals(0, libc.kcmpFile(self, pid, copy, 0));
                assertNotEquals(0, libc.kcmpFile(self, pid, copy, 1));
            } finally {
                libc.close(copy);
                libc.close(pidfd);
            }
        } finally {
            child.destroyForcibly().waitFor();
        }
        assertEquals(3, assertThrows(SyscallException.class, () -> libc.pidfdOpen((int) child.pid())).errno(),
                "ESRCH once it is reaped");
    }
}

package dev.criugpu.api.sys;

import dev.criugpu.api.Errno;
import dev.criugpu.api.bindings.Downcall;
import dev.criugpu.api.bindings.stat;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The syscall seam: the few libc entry points the plugins use on device files (open, close, ioctl, mmap,
 * munmap, fstat) and for named semaphores (sem_open, sem_close: hsakmt's). In production they are libc's; tests bind
 * the same signatures from a simulator library (the simulated KFD's {@code libkfdsim.so}, names prefixed
 * {@code kfdsim_}). The calls on files relative to a directory fd (openat, renameat, unlinkat, and fstat of what they
 * open) are always libc's: image files are real files under a simulated device too. The calls about processes (kcmp,
 * pidfd_open, pidfd_getfd) have no libc wrapper everywhere and nothing to simulate: they always go to the kernel
 * through libc's {@code syscall}. errno is captured right after each call.
 */
public final class Syscalls {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MemoryLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE = Linker.Option.captureCallState("errno");

    public static final int O_RDONLY = 0;
    public static final int O_RDWR = 2;
    public static final int O_WRONLY = 1;
    public static final int O_CREAT = 0x40;
    public static final int O_EXCL = 0x80;
    public static final int O_APPEND = 0x400;
    public static final int O_NONBLOCK = 0x800;
    public static final int O_NOCTTY = 0x100;
    public static final int O_DIRECTORY = 0x10000;
    public static final int O_NOFOLLOW = 0x20000;
    public static final int O_CLOEXEC = 0x80000;
    public static final int S_IFMT = 0170000;
    public static final int S_IFREG = 0100000;
    public static final int S_IFDIR = 0040000;
    public static final int PROT_READ = 1;
    public static final int PROT_WRITE = 2;
    public static final int MAP_SHARED = 1;

    private final String origin;
    private final Downcall open;
    private final Downcall close;
    private final Downcall ioctl;
    private final Downcall mmap;
    private final Downcall munmap;
    private final Downcall fstat;
    private final Downcall semOpen;
    private final Downcall semClose;
    private final Downcall openat;
    private final Downcall renameat;
    private final Downcall unlinkat;
    private final Downcall fileStat;
    private final Downcall write;

    private Syscalls(String origin, SymbolLookup lookup, String prefix) {
        this.origin = origin;
        open = bind(lookup, prefix + "open", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
                Linker.Option.firstVariadicArg(2));
        close = bind(lookup, prefix + "close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        ioctl = bind(lookup, prefix + "ioctl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS),
                Linker.Option.firstVariadicArg(2));
        mmap = bind(lookup, prefix + "mmap", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT,
                JAVA_INT, JAVA_LONG));
        munmap = bind(lookup, prefix + "munmap", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        fstat = bind(lookup, prefix + "fstat", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        semOpen = bind(lookup, prefix + "sem_open", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT),
                Linker.Option.firstVariadicArg(2));
        semClose = bind(lookup, prefix + "sem_close", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        SymbolLookup libc = LINKER.defaultLookup();
        openat = bind(libc, "openat", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
                Linker.Option.firstVariadicArg(3));
        renameat = bind(libc, "renameat", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
        unlinkat = bind(libc, "unlinkat", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT));
        fileStat = bind(libc, "fstat", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        write = bind(libc, "write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    }

    /**
     * Links now the calls on files relative to a directory fd ({@link ImageFiles}), which a dump makes on criu's main
     * thread from its init on: a plugin's prepare calls this on its own thread (issue 23).
     */
    public void linkDirectoryCalls() {
        for (Downcall d : new Downcall[] {openat, renameat, unlinkat, fileStat}) d.handle();
    }

    /** Found now, linked on first use: criu's start links only what it calls (issue 23). */
    private static Downcall bind(SymbolLookup lookup, String name, FunctionDescriptor d, Linker.Option... extra) {
        Linker.Option[] opts = new Linker.Option[extra.length + 1];
        System.arraycopy(extra, 0, opts, 0, extra.length);
        opts[extra.length] = CAPTURE;
        return Downcall.find(lookup, name, d, opts);
    }

    private static final Syscalls LIBC = new Syscalls("libc", LINKER.defaultLookup(), "");

    /** The real system calls. */
    public static Syscalls libc() {
        return LIBC;
    }

    /** The same entry points from another library, named {@code prefix + "open"} etc. (the simulated KFD). */
    public static Syscalls fromLibrary(String origin, SymbolLookup lookup, String prefix) {
        return new Syscalls(origin, lookup, prefix);
    }

    public String origin() {
        return origin;
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    public int open(String path, int flags) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            int fd = (int) open.handle().invokeExact(state, a.allocateFrom(path), flags, 0);
            if (fd < 0) throw failure("open " + path, errno(state));
            return fd;
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("open " + path, t);
        }
    }

    public void close(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            if ((int) close.handle().invokeExact(state, fd) < 0) throw failure("close fd " + fd, errno(state));
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("close", t);
        }
    }

    /**
     * ioctl(fd, request, arg), retried up to {@code retries} times on EINTR or EAGAIN as upstream does for KFD
     * calls; {@code what} names the call in the error.
     */
    public int ioctl(int fd, int request, MemorySegment arg, int retries, String what) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            for (int attempt = 0; ; attempt++) {
                int r = (int) ioctl.handle().invokeExact(state, fd, Integer.toUnsignedLong(request), arg);
                if (r >= 0) return r;
                int e = errno(state);
                if ((e != Errno.EINTR && e != Errno.EAGAIN) || attempt >= retries) throw failure(what, e);
            }
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(what, t);
        }
    }

    /** A shared mapping of {@code length} bytes at {@code offset} of {@code fd}. */
    public MemorySegment mmap(long length, int prot, int fd, long offset) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment p = (MemorySegment) mmap.handle().invokeExact(state, MemorySegment.NULL, length, prot, MAP_SHARED, fd, offset);
            if (p.address() == -1L) throw failure("mmap fd " + fd + " offset 0x" + Long.toHexString(offset), errno(state));
            return p.reinterpret(length);
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("mmap", t);
        }
    }

    public void munmap(MemorySegment mapping) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            if ((int) munmap.handle().invokeExact(state, mapping, mapping.byteSize()) < 0) throw failure("munmap", errno(state));
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("munmap", t);
        }
    }

    /** st_rdev of the file behind {@code fd}. */
    public long rdev(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment st = stat.allocate(a);
            if ((int) fstat.handle().invokeExact(state, fd, st) < 0) throw failure("fstat fd " + fd, errno(state));
            return stat.st_rdev(st);
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fstat", t);
        }
    }

    /** What fstat(2) says of an open file: enough to tell what it is, whose, and whether it is the one expected. */
    public record FileStat(long dev, long ino, int mode, int uid, long size) {
        public boolean isRegularFile() {
            return (mode & S_IFMT) == S_IFREG;
        }
    }

    /** fstat(2) of {@code fd}; always libc's. */
    public FileStat fileStat(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment st = stat.allocate(a);
            if ((int) fileStat.handle().invokeExact(state, fd, st) < 0) throw failure("fstat fd " + fd, errno(state));
            return new FileStat(stat.st_dev(st), stat.st_ino(st), stat.st_mode(st), stat.st_uid(st), stat.st_size(st));
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fstat", t);
        }
    }

    /** write(2) of {@code bytes} once (no retry): how many were written; always libc's. */
    public long write(int fd, byte[] bytes) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            long n = (long) write.handle().invokeExact(state, fd, a.allocateFrom(java.lang.foreign.ValueLayout.JAVA_BYTE, bytes),
                    (long) bytes.length);
            if (n < 0) throw failure("write fd " + fd, errno(state));
            return n;
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("write", t);
        }
    }

    /** st_mode of the file behind {@code fd} (its type and permission bits); always libc's. */
    public int mode(int fd) {
        return fileStat(fd).mode();
    }

    /** openat(dirFd, name, flags, mode): a new fd, or a {@link SyscallException} naming {@code name}. */
    public int openat(int dirFd, String name, int flags, int mode) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            int fd = (int) openat.handle().invokeExact(state, dirFd, a.allocateFrom(name), flags, mode);
            if (fd < 0) throw failure("open " + name, errno(state));
            return fd;
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("openat " + name, t);
        }
    }

    /** renameat(dirFd, from, dirFd, to): replaces whatever is at {@code to}, never following a symlink there. */
    public void renameat(int dirFd, String from, String to) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            if ((int) renameat.handle().invokeExact(state, dirFd, a.allocateFrom(from), dirFd, a.allocateFrom(to)) < 0) {
                throw failure("rename " + from + " to " + to, errno(state));
            }
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("renameat " + from, t);
        }
    }

    /** unlinkat(dirFd, name, 0): false when there was nothing of that name. */
    public boolean unlinkat(int dirFd, String name) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            if ((int) unlinkat.handle().invokeExact(state, dirFd, a.allocateFrom(name), 0) == 0) return true;
            if (errno(state) == Errno.ENOENT) return false;
            throw failure("unlink " + name, errno(state));
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("unlinkat " + name, t);
        }
    }

    /**
     * Opens the named semaphore {@code name} (glibc: {@code /dev/shm/sem.<name>}), creating it with {@code mode}
     * (less the umask) and {@code value} if it does not exist, and closes it again.
     */
    public void openOrCreateSemaphore(String name, int mode, int value) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment sem = (MemorySegment) semOpen.handle().invokeExact(state, a.allocateFrom(name), O_CREAT, mode, value);
            if (sem.address() == 0L) throw failure("sem_open " + name, errno(state)); // SEM_FAILED is NULL in glibc
            if ((int) semClose.handle().invokeExact(state, sem) < 0) throw failure("sem_close " + name, errno(state));
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("sem_open " + name, t);
        }
    }

    /** kcmp(2)'s type for "the same open file description". */
    public static final int KCMP_FILE = 0;

    /**
     * kcmp(pid1, pid2, KCMP_FILE, fd1, fd2): 0 when fd {@code fd1} of {@code pid1} and fd {@code fd2} of {@code pid2}
     * are the same open file description, else 1, 2 (an order) or 3 (different, unordered).
     */
    public int kcmpFile(int pid1, int pid2, int fd1, int fd2) {
        return (int) ProcessCalls.call("kcmp of fd " + fd1 + " of pid " + pid1 + " and fd " + fd2 + " of pid " + pid2,
                ProcessCalls.nr(312, 272), pid1, pid2, KCMP_FILE, fd1, fd2);
    }

    /** pidfd_open(pid, 0): a pidfd of {@code pid} (close-on-exec). */
    public int pidfdOpen(int pid) {
        return (int) ProcessCalls.call("pidfd_open " + pid, 434, pid, 0, 0, 0, 0);
    }

    /** pidfd_getfd(pidfd, fd, 0): a close-on-exec copy, in this process, of fd {@code fd} of the pidfd's process. */
    public int pidfdGetfd(int pidfd, int fd) {
        return (int) ProcessCalls.call("pidfd_getfd fd " + fd + " of pidfd " + pidfd, 438, pidfd, fd, 0, 0, 0);
    }

    /** fcntl(2) commands for a memfd's seals and a file's status flags. */
    public static final int F_GETFL = 3;
    public static final int F_GET_SEALS = 1034;
    public static final int O_ACCMODE = 3;

    /** fcntl(fd, cmd, 0): the call's result (flags, seals). */
    public int fcntl(int fd, int cmd) {
        return (int) ProcessCalls.call("fcntl " + cmd + " of fd " + fd, ProcessCalls.nr(72, 25), fd, cmd, 0, 0, 0);
    }

    /** pread(fd, buf, length, offset): the bytes read (fewer at the end of the file). */
    public byte[] pread(int fd, int length, long offset) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(length);
            long n = ProcessCalls.call("pread of fd " + fd, ProcessCalls.nr(17, 67), fd, buf.address(), length, offset, 0);
            return buf.asSlice(0, n).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        }
    }

    /** pwrite(fd, bytes, offset) once: how many were written. */
    public long pwrite(int fd, byte[] bytes, long offset) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocateFrom(java.lang.foreign.ValueLayout.JAVA_BYTE, bytes);
            return ProcessCalls.call("pwrite of fd " + fd, ProcessCalls.nr(18, 68), fd, buf.address(), bytes.length, offset, 0);
        }
    }

    /** setns(2)'s type for a network namespace. */
    public static final int CLONE_NEWNET = 0x40000000;

    /** setns(fd, nstype): moves the calling thread into the namespace {@code fd} refers to. */
    public void setns(int fd, int nstype) {
        ProcessCalls.call("setns of fd " + fd, ProcessCalls.nr(308, 268), fd, nstype, 0, 0, 0);
    }

    /** libc's {@code syscall}, bound on first use. */
    private static final class ProcessCalls {
        private static final MethodHandle SYSCALL = LINKER.downcallHandle(
                LINKER.defaultLookup().find("syscall").orElseThrow(() -> new IllegalStateException("no symbol syscall")),
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
                Linker.Option.firstVariadicArg(1), CAPTURE);

        private static final int ENOSYS = 38;

        /** The call's number on this machine (pidfd_* have one number everywhere); -1 where unknown. */
        static long nr(long x8664, long aarch64) {
            return switch (System.getProperty("os.arch")) {
                case "amd64", "x86_64" -> x8664;
                case "aarch64" -> aarch64;
                default -> -1;
            };
        }

        static long call(String what, long nr, long a, long b, long c, long d, long e) {
            if (nr < 0) throw failure(what, ENOSYS);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment state = arena.allocate(CALL_STATE);
                long r = (long) SYSCALL.invokeExact(state, nr, a, b, c, d, e);
                if (r < 0) throw failure(what, errno(state));
                return r;
            } catch (SyscallException ex) {
                throw ex;
            } catch (Throwable t) {
                throw new IllegalStateException(what, t);
            }
        }
    }

    private static SyscallException failure(String what, int errno) {
        return new SyscallException(errno, what + " failed: " + Errno.name(errno));
    }

}

package dev.criugpu.amdgpu.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The libc calls the baseline copies are made of (memfd_create, mmap, memcpy, malloc), bound directly and not
 * through the plugin's syscall seam, so the baseline carries none of the plugin's machinery.
 */
final class PlainLibc {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final int MFD_CLOEXEC = 1;
    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_SHARED = 1;

    private static final MethodHandle MEMFD_CREATE = fn("memfd_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle FTRUNCATE = fn("ftruncate", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle DUP = fn("dup", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle CLOSE = fn("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle MMAP = fn("mmap",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MUNMAP = fn("munmap", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle MALLOC = fn("malloc", FunctionDescriptor.of(ADDRESS, JAVA_LONG));
    private static final MethodHandle FREE = fn("free", FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle MEMCPY = fn("memcpy", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));

    private PlainLibc() {
    }

    private static MethodHandle fn(String name, FunctionDescriptor d) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), d);
    }

    /** An anonymous shared-memory file of {@code size} bytes (sparse until written). */
    static int memfd(String name, long size) {
        try (Arena a = Arena.ofConfined()) {
            int fd = (int) MEMFD_CREATE.invokeExact(a.allocateFrom(name), MFD_CLOEXEC);
            if (fd < 0) throw new IllegalStateException("memfd_create " + name + " failed");
            if ((int) FTRUNCATE.invokeExact(fd, size) != 0) throw new IllegalStateException("ftruncate " + name + " failed");
            return fd;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Drops the file's pages and gives it back its size (all zero again). */
    static void zero(int fd, long size) {
        try {
            if ((int) FTRUNCATE.invokeExact(fd, 0L) != 0 || (int) FTRUNCATE.invokeExact(fd, size) != 0) {
                throw new IllegalStateException("ftruncate of fd " + fd + " failed");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int dup(int fd) {
        try {
            int d = (int) DUP.invokeExact(fd);
            if (d < 0) throw new IllegalStateException("dup of fd " + fd + " failed");
            return d;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void close(int fd) {
        try {
            int r = (int) CLOSE.invokeExact(fd);
            if (r != 0) throw new IllegalStateException("close of fd " + fd + " failed");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** A shared mapping of {@code size} bytes of {@code fd}, read-only or read-write. */
    static MemorySegment map(int fd, long size, boolean writable) {
        try {
            int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
            MemorySegment p = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, size, prot, MAP_SHARED, fd, 0L);
            if (p.address() == -1L) throw new IllegalStateException("mmap of fd " + fd + " failed");
            return p.reinterpret(size);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void unmap(MemorySegment m) {
        try {
            if ((int) MUNMAP.invokeExact(m, m.byteSize()) != 0) throw new IllegalStateException("munmap failed");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment malloc(long size) {
        try {
            MemorySegment p = (MemorySegment) MALLOC.invokeExact(size);
            if (p.address() == 0) throw new OutOfMemoryError("malloc(" + size + ")");
            return p.reinterpret(size);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void free(MemorySegment p) {
        try {
            FREE.invokeExact(p);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void memcpy(MemorySegment dst, MemorySegment src, long n) {
        try {
            MemorySegment ignored = (MemorySegment) MEMCPY.invokeExact(dst, src, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }
}

package dev.criugpu.api.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * libc's process-spawning and pipe functions (jextract shape), for starting a process that does not belong to the
 * JVM's process machinery. glibc x86-64 sizes: {@code posix_spawn_file_actions_t} 80 bytes, {@code posix_spawnattr_t}
 * 336, {@code sigset_t} 128, {@code struct pollfd} 8 (int fd, short events, short revents).
 */
public final class spawn_h {
    public static final long FILE_ACTIONS_BYTES = 80;
    public static final long ATTR_BYTES = 336;
    public static final long SIGSET_BYTES = 128;
    public static final int POSIX_SPAWN_SETSIGDEF = 0x04;
    public static final int POSIX_SPAWN_SETSIGMASK = 0x08;
    public static final int POSIX_SPAWN_SETSID = 0x80;
    public static final int O_RDONLY = 0;
    public static final int O_WRONLY = 1;
    public static final int O_CLOEXEC = 02000000;
    public static final int POLLIN = 0x1;
    public static final int EINTR = 4;
    public static final int EAGAIN = 11;
    public static final int EPIPE = 32;

    public static final StructLayout POLLFD = MemoryLayout.structLayout(
            JAVA_INT.withName("fd"), JAVA_SHORT.withName("events"), JAVA_SHORT.withName("revents"));

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final MethodHandle PIPE2 = fn("pipe2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), true);
    private static final MethodHandle READ = fn("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), true);
    private static final MethodHandle WRITE = fn("write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), true);
    private static final MethodHandle CLOSE = fn("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT), false);
    private static final MethodHandle POLL = fn("poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), true);
    private static final MethodHandle WAITPID = fn("waitpid", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), true);
    private static final MethodHandle SPAWN = fn("posix_spawn",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS), false);
    private static final MethodHandle FA_INIT = fn("posix_spawn_file_actions_init", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
    private static final MethodHandle FA_DESTROY = fn("posix_spawn_file_actions_destroy", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
    private static final MethodHandle FA_DUP2 = fn("posix_spawn_file_actions_adddup2",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), false);
    private static final MethodHandle FA_OPEN = fn("posix_spawn_file_actions_addopen",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), false);
    private static final MethodHandle ATTR_INIT = fn("posix_spawnattr_init", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
    private static final MethodHandle ATTR_DESTROY = fn("posix_spawnattr_destroy", FunctionDescriptor.of(JAVA_INT, ADDRESS), false);
    private static final MethodHandle ATTR_FLAGS = fn("posix_spawnattr_setflags", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_SHORT), false);
    private static final MethodHandle ATTR_SIGMASK = fn("posix_spawnattr_setsigmask", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), false);
    private static final MethodHandle ATTR_SIGDEFAULT = fn("posix_spawnattr_setsigdefault", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), false);
    private static final MemorySegment ENVIRON = LINKER.defaultLookup().find("environ").orElseThrow()
            .reinterpret(ADDRESS.byteSize());

    private spawn_h() {
    }

    private static MethodHandle fn(String name, FunctionDescriptor fd, boolean errno) {
        MemorySegment addr = LINKER.defaultLookup().find(name).orElseThrow(() -> new IllegalStateException("libc lacks " + name));
        return errno ? LINKER.downcallHandle(addr, fd, Linker.Option.captureCallState("errno")) : LINKER.downcallHandle(addr, fd);
    }

    /** A call's result and the errno libc left (meaningful when the result is -1). */
    public record Result(long value, int errno) {
        public boolean failed() {
            return value < 0;
        }
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    private static IllegalStateException broken(String what, Throwable t) {
        return new IllegalStateException(what + " downcall failed", t);
    }

    /** {@code pipe2(fds, O_CLOEXEC)}: {read end, write end}, or the errno as a negative single element. */
    public static int[] pipeCloexec() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment fds = arena.allocate(JAVA_INT, 2);
            MemorySegment st = arena.allocate(CALL_STATE);
            int rc = (int) PIPE2.invokeExact(st, fds, O_CLOEXEC);
            return rc != 0 ? new int[] {-errno(st)} : new int[] {fds.getAtIndex(JAVA_INT, 0), fds.getAtIndex(JAVA_INT, 1)};
        } catch (Throwable t) {
            throw broken("pipe2", t);
        }
    }

    public static Result read(int fd, MemorySegment buf, long len) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment st = arena.allocate(CALL_STATE);
            long n = (long) READ.invokeExact(st, fd, buf, len);
            return new Result(n, n < 0 ? errno(st) : 0);
        } catch (Throwable t) {
            throw broken("read", t);
        }
    }

    public static Result write(int fd, MemorySegment buf, long len) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment st = arena.allocate(CALL_STATE);
            long n = (long) WRITE.invokeExact(st, fd, buf, len);
            return new Result(n, n < 0 ? errno(st) : 0);
        } catch (Throwable t) {
            throw broken("write", t);
        }
    }

    public static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw broken("close", t);
        }
    }

    /** {@code poll} on one fd for POLLIN: 1 readable (or hung up), 0 timed out, -errno on failure. */
    public static int pollIn(int fd, int timeoutMs) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(POLLFD);
            p.set(JAVA_INT, 0, fd);
            p.set(JAVA_SHORT, 4, (short) POLLIN);
            MemorySegment st = arena.allocate(CALL_STATE);
            int rc = (int) POLL.invokeExact(st, p, 1L, timeoutMs);
            return rc < 0 ? -errno(st) : rc;
        } catch (Throwable t) {
            throw broken("poll", t);
        }
    }

    /** {@code waitpid(pid, &status, 0)}, retried on EINTR: the wait status, or -errno. */
    public static int waitpid(int pid) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment status = arena.allocate(JAVA_INT);
            MemorySegment st = arena.allocate(CALL_STATE);
            while (true) {
                int rc = (int) WAITPID.invokeExact(st, pid, status, 0);
                if (rc >= 0) return status.get(JAVA_INT, 0);
                if (errno(st) != EINTR) return -errno(st);
            }
        } catch (Throwable t) {
            throw broken("waitpid", t);
        }
    }

    /**
     * {@code posix_spawn(&pid, path, actions, attr, argv, environ)} with the calling process's environment.
     *
     * @param dup2 pairs {from, to} of fds the child gets (from is closed there by its O_CLOEXEC)
     * @param devNull fds the child opens on /dev/null
     * @param sigDefault signals set back to their default action in the child; its signal mask is emptied
     * @return the child's pid, or -errno
     */
    public static int spawn(String path, java.util.List<String> argv, int[][] dup2, int[] devNull, int[] sigDefault,
                            boolean newSession) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment actions = arena.allocate(FILE_ACTIONS_BYTES, 8);
            MemorySegment attr = arena.allocate(ATTR_BYTES, 8);
            check((int) FA_INIT.invokeExact(actions), "posix_spawn_file_actions_init");
            check((int) ATTR_INIT.invokeExact(attr), "posix_spawnattr_init");
            try {
                for (int[] d : dup2) check((int) FA_DUP2.invokeExact(actions, d[0], d[1]), "adddup2");
                MemorySegment devNullPath = arena.allocateFrom("/dev/null");
                for (int fd : devNull) {
                    check((int) FA_OPEN.invokeExact(actions, fd, devNullPath, fd == 0 ? O_RDONLY : O_WRONLY, 0), "addopen");
                }
                MemorySegment empty = arena.allocate(SIGSET_BYTES, 8);
                MemorySegment defaults = arena.allocate(SIGSET_BYTES, 8);
                long bits = 0;
                for (int sig : sigDefault) bits |= 1L << (sig - 1);
                defaults.set(JAVA_LONG, 0, bits);
                check((int) ATTR_SIGMASK.invokeExact(attr, empty), "setsigmask");
                check((int) ATTR_SIGDEFAULT.invokeExact(attr, defaults), "setsigdefault");
                short flags = (short) (POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (newSession ? POSIX_SPAWN_SETSID : 0));
                check((int) ATTR_FLAGS.invokeExact(attr, flags), "setflags");
                MemorySegment args = arena.allocate(ADDRESS, argv.size() + 1);
                for (int i = 0; i < argv.size(); i++) args.setAtIndex(ADDRESS, i, arena.allocateFrom(argv.get(i)));
                args.setAtIndex(ADDRESS, argv.size(), MemorySegment.NULL);
                MemorySegment pid = arena.allocate(JAVA_INT);
                MemorySegment env = ENVIRON.get(ADDRESS, 0);
                int rc = (int) SPAWN.invokeExact(pid, arena.allocateFrom(path), actions, attr, args, env);
                return rc != 0 ? -rc : pid.get(JAVA_INT, 0);
            } finally {
                int a = (int) FA_DESTROY.invokeExact(actions);
                int b = (int) ATTR_DESTROY.invokeExact(attr);
            }
        } catch (Throwable t) {
            throw broken("posix_spawn", t);
        }
    }

    private static void check(int rc, String what) {
        if (rc != 0) throw new IllegalStateException(what + " failed with errno " + rc);
    }
}

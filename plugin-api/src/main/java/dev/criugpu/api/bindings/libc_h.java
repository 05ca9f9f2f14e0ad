package dev.criugpu.api.bindings;

import dev.criugpu.api.Errno;

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

/**
 * libc's {@code ptrace}, {@code waitpid}, {@code prctl}, {@code fcntl}, {@code execvp} and {@code syslog}, for both vendors and the command line, with errno captured right after the call (jextract shape plus
 * {@code Linker.Option.captureCallState}). Numbers are Linux x86-64 (linux/ptrace.h, bits/waitflags.h).
 */
public final class libc_h {
    public static final int PTRACE_CONT = 7;
    public static final int PTRACE_DETACH = 17;
    public static final int PTRACE_SEIZE = 0x4206;
    public static final int PTRACE_SETOPTIONS = 0x4200;
    public static final int PTRACE_INTERRUPT = 0x4207;
    public static final int PTRACE_GETSIGMASK = 0x420a;
    public static final int PTRACE_SETSIGMASK = 0x420b;
    public static final long PTRACE_O_TRACESYSGOOD = 1;
    public static final long PTRACE_O_SUSPEND_SECCOMP = 1L << 21;
    public static final int PTRACE_EVENT_STOP = 128;
    public static final int WALL = 0x40000000;
    public static final int WNOHANG = 1;
    public static final int SIGTRAP = 5;
    public static final int ESRCH = 3;
    public static final int EINTR = 4;

    /** The kernel's sigset for PTRACE_GETSIGMASK/SETSIGMASK: 64 bits, bit n-1 = signal n. */
    public static final long KERNEL_SIGSET_SIZE = 8;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    // each function in a class of its own (jextract's shape): linked when first called, not when criu's JVM starts

    /** {@code long ptrace(enum __ptrace_request request, pid_t pid, void *addr, void *data)}, variadic after 1. */
    private static final class Ptrace {
        static final MethodHandle HANDLE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("ptrace").orElseThrow(),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS),
                Linker.Option.firstVariadicArg(1), Linker.Option.captureCallState("errno"));
    }

    /** {@code pid_t waitpid(pid_t pid, int *wstatus, int options)} */
    private static final class Waitpid {
        static final MethodHandle HANDLE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("waitpid").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT),
                Linker.Option.captureCallState("errno"));
    }

    /** {@code int prctl(int option, ...)}, used here only as prctl(PR_GET_CHILD_SUBREAPER, int *). */
    private static final class Prctl {
        static final MethodHandle HANDLE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("prctl").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS),
                Linker.Option.firstVariadicArg(1));
    }

    public static final int PR_GET_CHILD_SUBREAPER = 37;
    public static final int PR_SET_SECCOMP = 22;
    public static final int PR_SET_NO_NEW_PRIVS = 38;
    public static final int SECCOMP_MODE_FILTER = 2;

    /** {@code int prctl(int option, unsigned long, unsigned long, unsigned long, unsigned long)}, variadic after 1. */
    private static final class PrctlLongs {
        static final MethodHandle HANDLE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("prctl").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
                Linker.Option.firstVariadicArg(1), Linker.Option.captureCallState("errno"));
    }

    public static final int F_SETFD = 2;
    public static final int FD_CLOEXEC = 1;

    /** {@code int fcntl(int fd, int cmd, ...)} with one int argument */
    private static final class Fcntl {
        static final MethodHandle HANDLE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("fcntl").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
                Linker.Option.firstVariadicArg(2), Linker.Option.captureCallState("errno"));
    }

    /** {@code int execvp(const char *file, char *const argv[])} */
    private static final class Execvp {
        static final MethodHandle HANDLE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("execvp").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), Linker.Option.captureCallState("errno"));
    }

    /** {@code uid_t geteuid(void)} */
    private static final class Geteuid {
        static final MethodHandle HANDLE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("geteuid").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
    }

    /** {@code void syslog(int priority, const char *format, ...)}, called with "%s" and one string. */
    private static final class Syslog {
        static final MethodHandle HANDLE = LINKER.downcallHandle(
                LINKER.defaultLookup().find("syslog").orElseThrow(),
                FunctionDescriptor.ofVoid(JAVA_INT, ADDRESS, ADDRESS), Linker.Option.firstVariadicArg(2));
    }

    /** syslog.h: facility LOG_DAEMON, level LOG_ERR. */
    public static final int LOG_DAEMON_ERR = (3 << 3) | 3;

    private libc_h() {
    }

    /**
     * syslog({@code priority}, "%s", {@code message}): one record to the system log (/dev/log; the journal where
     * systemd runs), under this program's name and pid; nothing happens where nothing listens.
     */
    public static void syslog(int priority, String message) {
        try (Arena arena = Arena.ofConfined()) {
            Syslog.HANDLE.invokeExact(priority, arena.allocateFrom("%s"), arena.allocateFrom(message));
        } catch (Throwable t) {
            throw new IllegalStateException("syslog downcall failed", t);
        }
    }

    /** Whether this process is a child subreaper (orphaned descendants would be reparented to it). */
    public static boolean isChildSubreaper() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment flag = arena.allocate(JAVA_INT);
            int rc = (int) Prctl.HANDLE.invokeExact(PR_GET_CHILD_SUBREAPER, flag);
            return rc == 0 && flag.get(JAVA_INT, 0) != 0;
        } catch (Throwable t) {
            throw new IllegalStateException("prctl downcall failed", t);
        }
    }

    /** prctl({@code option}, a2, a3, a4, a5), e.g. PR_SET_SECCOMP with a filter's address in a3. */
    public static Result prctl(int option, long a2, long a3, long a4, long a5) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int r = (int) PrctlLongs.HANDLE.invokeExact(state, option, a2, a3, a4, a5);
            return new Result(r, (int) ERRNO.get(state, 0L));
        } catch (Throwable t) {
            throw new IllegalStateException("prctl downcall failed", t);
        }
    }

    /** fcntl({@code fd}, {@code cmd}, {@code arg}), e.g. F_SETFD with FD_CLOEXEC. */
    public static Result fcntl(int fd, int cmd, int arg) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int r = (int) Fcntl.HANDLE.invokeExact(state, fd, cmd, arg);
            return new Result(r, (int) ERRNO.get(state, 0L));
        } catch (Throwable t) {
            throw new IllegalStateException("fcntl downcall failed", t);
        }
    }

    /**
     * execvp({@code argv[0]}, argv): replaces this process (the JVM with all its threads) by the program, looked up on
     * PATH; returns only when that failed, with its errno.
     */
    public static int execvp(java.util.List<String> argv) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment vector = arena.allocate(ADDRESS, argv.size() + 1L);
            for (int i = 0; i < argv.size(); i++) vector.setAtIndex(ADDRESS, i, arena.allocateFrom(argv.get(i)));
            vector.setAtIndex(ADDRESS, argv.size(), MemorySegment.NULL);
            MemorySegment state = arena.allocate(CALL_STATE);
            int r = (int) Execvp.HANDLE.invokeExact(state, vector.getAtIndex(ADDRESS, 0), vector);
            return r == -1 ? (int) ERRNO.get(state, 0L) : 0;
        } catch (Throwable t) {
            throw new IllegalStateException("execvp downcall failed", t);
        }
    }

    /** The effective uid of this process (criu's). */
    public static int geteuid() {
        try {
            return (int) Geteuid.HANDLE.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("geteuid downcall failed", t);
        }
    }

    /** A call's result with the errno libc left (meaningful when the result is -1). */
    public record Result(long value, int errno) {
        public boolean failed() {
            return value == -1;
        }
    }

    public static Result ptrace(int request, int pid, MemorySegment addr, MemorySegment data) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            long r = (long) Ptrace.HANDLE.invokeExact(state, request, pid, addr, data);
            return new Result(r, (int) ERRNO.get(state, 0L));
        } catch (Throwable t) {
            throw new IllegalStateException("ptrace downcall failed", t);
        }
    }

    public static Result waitpid(int pid, MemorySegment wstatus, int options) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int r = (int) Waitpid.HANDLE.invokeExact(state, pid, wstatus, options);
            return new Result(r, (int) ERRNO.get(state, 0L));
        } catch (Throwable t) {
            throw new IllegalStateException("waitpid downcall failed", t);
        }
    }

    public static boolean WIFSTOPPED(int status) {
        return (status & 0xff) == 0x7f;
    }

    public static int WSTOPSIG(int status) {
        return (status >> 8) & 0xff;
    }

    /** The ptrace event of a stop ({@code status >> 16}), e.g. {@link #PTRACE_EVENT_STOP}. */
    public static int ptraceEvent(int status) {
        return (status >>> 16) & 0xffff;
    }

    /** {@link Errno#name}, with what ESRCH means for ptrace. */
    public static String errnoName(int errno) {
        return errno == ESRCH ? Errno.name(errno) + ", no such thread or not stopped by us" : Errno.name(errno);
    }
}

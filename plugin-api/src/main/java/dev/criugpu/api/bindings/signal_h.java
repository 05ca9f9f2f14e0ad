package dev.criugpu.api.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The few signal functions of libc the runtime needs (jextract shape): {@code sigpending}, the disposition half of
 * {@code sigaction}, and {@code kill}. glibc x86-64: {@code sigset_t} is 128 bytes with signal n at bit n-1;
 * {@code struct sigaction} starts with {@code sa_handler}.
 */
public final class signal_h {
    public static final int SIGHUP = 1;
    public static final int SIGINT = 2;
    public static final int SIGQUIT = 3;
    public static final int SIGKILL = 9;
    public static final int SIGTERM = 15;
    /** {@code SIG_IGN} as a handler value. */
    public static final long SIG_IGN = 1;

    private static final long SIGSET_BYTES = 128;
    /** {@code struct sigaction}: handler, sa_mask, sa_flags (+ padding), sa_restorer. */
    private static final MemoryLayout SIGACTION = MemoryLayout.structLayout(
            JAVA_LONG.withName("sa_handler"), MemoryLayout.sequenceLayout(SIGSET_BYTES / 8, JAVA_LONG).withName("sa_mask"),
            JAVA_INT.withName("sa_flags"), MemoryLayout.paddingLayout(4), ADDRESS.withName("sa_restorer"));

    private static final Linker LINKER = Linker.nativeLinker();

    // each function in a class of its own (jextract's shape): linked when first called, not when criu's JVM starts
    private static final class Sigpending {
        static final MethodHandle HANDLE = fn("sigpending", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    private static final class Sigaction {
        static final MethodHandle HANDLE = fn("sigaction", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    }

    private static final class Kill {
        static final MethodHandle HANDLE = fn("kill", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    }

    private signal_h() {
    }

    private static MethodHandle fn(String name, FunctionDescriptor fd) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), fd);
    }

    public static long sigactionSize() {
        return SIGACTION.byteSize();
    }

    /** The signals 1..64 pending for the calling thread or its process, as a bit mask (bit n-1 = signal n). */
    public static long pendingMask() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment set = arena.allocate(SIGSET_BYTES);
            if ((int) Sigpending.HANDLE.invokeExact(set) != 0) return 0;
            return set.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw new IllegalStateException("sigpending downcall failed", t);
        }
    }

    /** The handler installed for {@code sig} ({@code SIG_DFL} 0, {@code SIG_IGN} 1, else a function address). */
    public static long handler(int sig) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment old = arena.allocate(SIGACTION);
            if ((int) Sigaction.HANDLE.invokeExact(sig, MemorySegment.NULL, old) != 0) return 0;
            return old.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw new IllegalStateException("sigaction downcall failed", t);
        }
    }

    /** {@code kill(pid, sig) == 0}. */
    public static boolean kill(int pid, int sig) {
        try {
            return (int) Kill.HANDLE.invokeExact(pid, sig) == 0;
        } catch (Throwable t) {
            throw new IllegalStateException("kill downcall failed", t);
        }
    }
}

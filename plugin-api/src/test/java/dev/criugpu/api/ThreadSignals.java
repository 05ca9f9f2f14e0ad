package dev.criugpu.api;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Signals aimed at the calling thread alone, as the shim arranges them around a hook: block a signal on this thread,
 * send it to this thread (so no other thread of the test JVM can take it), and take it back without delivery.
 */
public final class ThreadSignals implements AutoCloseable {
    private static final Linker L = Linker.nativeLinker();
    private static final MethodHandle SIGMASK = L.downcallHandle(L.defaultLookup().find("pthread_sigmask").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle SYSCALL3 = L.downcallHandle(L.defaultLookup().find("syscall").orElseThrow(),
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG), Linker.Option.firstVariadicArg(1));
    private static final MethodHandle SIGTIMEDWAIT = L.downcallHandle(L.defaultLookup().find("sigtimedwait").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    private static final int SIG_BLOCK = 0, SIG_SETMASK = 2;
    private static final long SYS_GETTID = 186, SYS_TGKILL = 234;

    private final Arena arena = Arena.ofConfined();
    private final MemorySegment old = arena.allocate(128);
    private final int sig;

    /** Blocks {@code sig} on this thread until {@link #close()}. */
    public ThreadSignals(int sig) throws Throwable {
        this.sig = sig;
        int rc = (int) SIGMASK.invokeExact(SIG_BLOCK, set(sig), old);
        if (rc != 0) throw new IllegalStateException("pthread_sigmask " + rc);
    }

    private MemorySegment set(int s) {
        MemorySegment set = arena.allocate(128);
        set.set(JAVA_LONG, 0, 1L << (s - 1));
        return set;
    }

    /** Sends the signal to this thread only; it stays pending while blocked. */
    public void raiseHere() throws Throwable {
        long pid = ProcessHandle.current().pid();
        long tid = (long) SYSCALL3.invokeExact(SYS_GETTID, 0L, 0L, 0L);
        long rc = (long) SYSCALL3.invokeExact(SYS_TGKILL, pid, tid, (long) sig);
        if (rc != 0) throw new IllegalStateException("tgkill failed");
    }

    /** Takes a pending instance back (never delivered), then restores the thread's mask. */
    @Override
    public void close() {
        try {
            MemorySegment zero = arena.allocate(16);
            int ignored = (int) SIGTIMEDWAIT.invokeExact(set(sig), MemorySegment.NULL, zero);
            int rc = (int) SIGMASK.invokeExact(SIG_SETMASK, old, MemorySegment.NULL);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        } finally {
            arena.close();
        }
    }
}

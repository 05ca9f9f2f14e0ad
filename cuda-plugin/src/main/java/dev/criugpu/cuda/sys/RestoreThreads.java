package dev.criugpu.cuda.sys;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.bindings.libc_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Lets the CUDA restore thread of a task that criu holds in a ptrace stop run while the driver checkpoints or
 * restores, then stops it again exactly as criu had it. Every call here must run on the thread that seized the
 * tasks (criu's main thread, i.e. the hook's thread): the kernel refuses ptrace requests from any other.
 *
 * <p>Wake: save its signal mask, block every signal but SIGTRAP, clear the ptrace options (criu's
 * PTRACE_O_SUSPEND_SECCOMP must not stay on while it runs), PTRACE_CONT. Re-stop: PTRACE_INTERRUPT, wait for the
 * stop, set the options criu uses (SUSPEND_SECCOMP | TRACESYSGOOD), put the saved mask back.
 */
public final class RestoreThreads implements RestoreThreadControl {
    /** The one instance: ptrace state lives in the kernel, not here. */
    public static final RestoreThreads PTRACE = new RestoreThreads();

    private static final long CRIU_OPTIONS = libc_h.PTRACE_O_SUSPEND_SECCOMP | libc_h.PTRACE_O_TRACESYSGOOD;
    private static final long ALL_BUT_SIGTRAP = ~(1L << (libc_h.SIGTRAP - 1));
    /** {@link #ALL_BUT_SIGTRAP} as the kernel keeps it: SIGKILL and SIGSTOP cannot be blocked. */
    static final long BLOCKED_WHILE_WOKEN = ALL_BUT_SIGTRAP & ~(1L << (9 - 1)) & ~(1L << (19 - 1));
    private static final long POLL_NANOS = 1_000_000;

    private RestoreThreads() {
    }

    private static String what(int pid, int tid) {
        return "CUDA restore thread " + tid + " of pid " + pid;
    }

    private static void ptrace(int request, int pid, int tid, long addr, MemorySegment data, String step) {
        libc_h.Result r = libc_h.ptrace(request, tid, MemorySegment.ofAddress(addr), data);
        if (r.failed()) {
            throw new CriuException(r.errno() == libc_h.ESRCH ? Errno.ESRCH : Errno.EIO,
                    what(pid, tid) + ": " + step + " failed: " + libc_h.errnoName(r.errno()));
        }
    }

    @Override
    public Woken wake(int pid, int tid) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(JAVA_LONG);
            ptrace(libc_h.PTRACE_GETSIGMASK, pid, tid, libc_h.KERNEL_SIGSET_SIZE, mask, "PTRACE_GETSIGMASK");
            long saved = mask.get(JAVA_LONG, 0);
            MemorySegment block = arena.allocate(JAVA_LONG);
            block.set(JAVA_LONG, 0, ALL_BUT_SIGTRAP);
            ptrace(libc_h.PTRACE_SETSIGMASK, pid, tid, libc_h.KERNEL_SIGSET_SIZE, block, "blocking its signals");
            try {
                ptrace(libc_h.PTRACE_SETOPTIONS, pid, tid, 0, MemorySegment.NULL, "clearing ptrace options");
                try {
                    ptrace(libc_h.PTRACE_CONT, pid, tid, 0, MemorySegment.NULL, "PTRACE_CONT");
                } catch (CriuException e) {
                    libc_h.ptrace(libc_h.PTRACE_SETOPTIONS, tid, MemorySegment.NULL, MemorySegment.ofAddress(CRIU_OPTIONS));
                    throw e;
                }
            } catch (CriuException e) {
                libc_h.ptrace(libc_h.PTRACE_SETSIGMASK, tid, MemorySegment.ofAddress(libc_h.KERNEL_SIGSET_SIZE), mask);
                throw e;
            }
            return new Woken(pid, tid, saved);
        }
    }

    @Override
    public void restop(Woken w) {
        restopBefore(w, Long.MAX_VALUE);
    }

    @Override
    public boolean restopBefore(Woken w, long deadlineNanos) {
        try (Arena arena = Arena.ofConfined()) {
            ptrace(libc_h.PTRACE_INTERRUPT, w.pid(), w.tid(), 0, MemorySegment.NULL, "PTRACE_INTERRUPT");
            if (!awaitInterruptStop(w, deadlineNanos, arena.allocate(JAVA_INT))) return false;
            ptrace(libc_h.PTRACE_SETOPTIONS, w.pid(), w.tid(), 0, MemorySegment.ofAddress(CRIU_OPTIONS),
                    "restoring criu's ptrace options");
            MemorySegment mask = arena.allocate(JAVA_LONG);
            mask.set(JAVA_LONG, 0, w.savedMask());
            ptrace(libc_h.PTRACE_SETSIGMASK, w.pid(), w.tid(), libc_h.KERNEL_SIGSET_SIZE, mask, "restoring its signal mask");
            return true;
        }
    }

    /** What {@link #giveBackMask} did. */
    public enum MaskReturn {
        /** It has its mask from before the dump again. */
        GIVEN_BACK,
        /** It had set another mask itself meanwhile, which is left alone. */
        CHANGED_BY_ITSELF,
        /** It did not stop by the deadline (still inside a call): it stays traced until this process ends. */
        DID_NOT_STOP,
        /** The thread id is no longer a thread of that process (it ended and the id was taken again): left alone. */
        NOT_ITS_THREAD
    }

    /**
     * Once criu is gone: gives a restore thread that criu left running with {@link #ALL_BUT_SIGTRAP} blocked its
     * mask from before the dump back. Traces that one thread for the moment it takes (seize, interrupt, set the
     * mask, detach), from the calling thread, which must not be one criu seized with. Whether {@code tid} is still a
     * thread of the process {@code pid} that started at {@code startTime} (clock ticks; -1 unknown) is checked once
     * it is stopped, when neither can change: ids are reused once their thread has ended.
     */
    public MaskReturn giveBackMask(int pid, int tid, long savedMask, long startTime, long deadlineNanos) {
        Woken w = new Woken(pid, tid, savedMask);
        if (!threadOf(pid, tid, startTime)) return MaskReturn.NOT_ITS_THREAD; // then nothing foreign is even seized
        try (Arena arena = Arena.ofConfined()) {
            ptrace(libc_h.PTRACE_SEIZE, pid, tid, 0, MemorySegment.NULL, "PTRACE_SEIZE");
            ptrace(libc_h.PTRACE_INTERRUPT, pid, tid, 0, MemorySegment.NULL, "PTRACE_INTERRUPT");
            if (!awaitInterruptStop(w, deadlineNanos, arena.allocate(JAVA_INT))) return MaskReturn.DID_NOT_STOP;
            try {
                if (!threadOf(pid, tid, startTime)) return MaskReturn.NOT_ITS_THREAD; // taken between check and seize
                MemorySegment mask = arena.allocate(JAVA_LONG);
                ptrace(libc_h.PTRACE_GETSIGMASK, pid, tid, libc_h.KERNEL_SIGSET_SIZE, mask, "PTRACE_GETSIGMASK");
                if (mask.get(JAVA_LONG, 0) != BLOCKED_WHILE_WOKEN) return MaskReturn.CHANGED_BY_ITSELF;
                mask.set(JAVA_LONG, 0, savedMask);
                ptrace(libc_h.PTRACE_SETSIGMASK, pid, tid, libc_h.KERNEL_SIGSET_SIZE, mask, "restoring its signal mask");
                return MaskReturn.GIVEN_BACK;
            } finally {
                libc_h.ptrace(libc_h.PTRACE_DETACH, tid, MemorySegment.NULL, MemorySegment.NULL);
            }
        }
    }

    private static boolean threadOf(int pid, int tid, long startTime) {
        return java.nio.file.Files.isDirectory(java.nio.file.Path.of("/proc/" + pid + "/task/" + tid))
                && (startTime < 0 || dev.criugpu.api.sys.ProcStat.alive(pid, startTime));
    }

    /** Waits for the stop our PTRACE_INTERRUPT asked for; false when the deadline passed first. */
    private static boolean awaitInterruptStop(Woken w, long deadlineNanos, MemorySegment status) {
        boolean bounded = deadlineNanos != Long.MAX_VALUE;
        while (true) {
            if (bounded && System.nanoTime() - deadlineNanos >= 0) return false;
            libc_h.Result r = libc_h.waitpid(w.tid(), status, libc_h.WALL | (bounded ? libc_h.WNOHANG : 0));
            if (r.failed() && r.errno() == libc_h.EINTR) continue;
            if (r.failed()) {
                throw new CriuException(Errno.ESRCH, what(w.pid(), w.tid()) + ": waiting for its stop failed: "
                        + libc_h.errnoName(r.errno()));
            }
            if (r.value() == 0) { // WNOHANG: not stopped yet
                LockSupport.parkNanos(POLL_NANOS);
                continue;
            }
            int s = status.get(JAVA_INT, 0);
            if (!libc_h.WIFSTOPPED(s)) {
                throw new CriuException(Errno.ESRCH, what(w.pid(), w.tid()) + " ended (wait status 0x"
                        + Integer.toHexString(s) + ") instead of stopping");
            }
            if (libc_h.ptraceEvent(s) == libc_h.PTRACE_EVENT_STOP) return true;
            // Any other stop (a signal-delivery stop cannot happen with all but SIGTRAP blocked, but be safe):
            // suppress it and keep waiting for our interrupt's stop.
            ptrace(libc_h.PTRACE_CONT, w.pid(), w.tid(), 0, MemorySegment.NULL, "continuing past an unexpected stop");
        }
    }
}

package dev.criugpu.cuda.sys;

/**
 * Letting a task's CUDA restore thread run while criu holds the task stopped, and stopping it again (see
 * {@link RestoreThreads} for the ptrace implementation). Calls happen on the hook thread only.
 */
public interface RestoreThreadControl {
    /** A restore thread we let run, with the signal mask to give back. */
    record Woken(int pid, int tid, long savedMask) {
    }

    Woken wake(int pid, int tid);

    void restop(Woken w);

    /**
     * As {@link #restop} when criu is ending: gives up at {@code deadlineNanos} ({@link System#nanoTime}) instead of
     * waiting for a thread inside a driver call, which stops only when the call returns. False when it did not stop
     * by then: it then keeps its signals blocked.
     */
    boolean restopBefore(Woken w, long deadlineNanos);
}

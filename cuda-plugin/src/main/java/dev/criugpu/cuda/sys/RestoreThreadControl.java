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
}

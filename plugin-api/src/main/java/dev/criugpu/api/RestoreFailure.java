package dev.criugpu.api;

import dev.criugpu.api.bindings.signal_h;

/**
 * The one policy, for every vendor, when a task's device state cannot be restored after criu forked it (in
 * RESUME_DEVICES_LATE): criu ignores that hook's result, and a task that ran on would block in its next GPU call or
 * compute on memory that is not its own. So the task is killed while criu still holds it in a ptrace stop. criu then
 * cannot detach it and fails the whole restore (criu 4.2.1: "Unable to detach N: No such process", then "Killing
 * processes because of failure on restore", exit status 1), so no task of the tree runs and the command fails.
 */
public final class RestoreFailure {
    private RestoreFailure() {
    }

    /**
     * Kills {@code pid} and returns the one error line for it, naming the pid and {@code reason}.
     */
    public static CriuException killTask(int pid, String reason) {
        boolean killed = signal_h.kill(pid, signal_h.SIGKILL);
        return new CriuException(Errno.EIO, "pid " + pid + ": " + reason + "; "
                + (killed ? "killed it so that it cannot run without its GPU state (this fails the restore)"
                          : "it has gone already"));
    }
}

package dev.criugpu.api;

import dev.criugpu.api.bindings.signal_h;
import dev.criugpu.api.sys.TaskStderr;
import dev.criugpu.api.sys.Tracees;

import java.time.Duration;
import java.util.List;

/**
 * The one policy, for every vendor, when a task's device state cannot be restored after criu forked it (in
 * RESUME_DEVICES_LATE): criu ignores that hook's result, and a task that ran on would block in its next GPU call or
 * compute on memory that is not its own. So the task is killed while criu still holds it in a ptrace stop. criu then
 * cannot detach it and fails the whole restore (criu 4.2.1: "Unable to detach N: No such process", then "Killing
 * processes because of failure on restore", exit status 1), so no task of the tree runs and the command fails.
 * criu traces every thread of the tree from the hook's thread, and a traced thread that dies stays a zombie until
 * its tracer waits for it. Where the task is the first process of its pid namespace (every container's is), its own
 * exit waits for the namespace's other tasks to be gone, while criu waits for the task: both hung (measured through
 * containerd on a GPU host; LateRestoreFailureIT reproduces it). So this thread, their tracer, waits for them.
 */
public final class RestoreFailure {
    private static final Duration RELEASE_LIMIT = Duration.ofSeconds(10);

    private RestoreFailure() {
    }

    /**
     * Kills {@code pid} and returns the one error line for it, naming the pid and {@code reason}. The task's own
     * stderr hears it first ({@link TaskStderr}): criu's caller may delete criu's log with the failed restore.
     */
    public static CriuException killTask(int pid, String reason) {
        String told = TaskStderr.tell(pid, "criu restore (criu-java-gpu): pid " + pid + ": " + reason
                + "; killing it, since it cannot run without its GPU state");
        List<Integer> dependents = Tracees.dependents(pid);
        boolean killed = signal_h.kill(pid, signal_h.SIGKILL);
        List<Integer> left = killed ? Tracees.awaitExits(dependents, RELEASE_LIMIT) : List.of();
        if (!left.isEmpty()) {
            return new CriuException(Errno.EIO, "pid " + pid + ": " + reason + "; killed it, but thread(s) " + left
                    + " of it or of its pid namespace (" + Tracees.describe(left) + ") did not exit within " + RELEASE_LIMIT.toSeconds() + " s: criu may "
                    + "hang waiting for it (kill criu to end it); " + told);
        }
        return new CriuException(Errno.EIO, "pid " + pid + ": " + reason + "; "
                + (killed ? "killed it so that it cannot run without its GPU state (this fails the restore); " + told
                          : "it has gone already"));
    }
}

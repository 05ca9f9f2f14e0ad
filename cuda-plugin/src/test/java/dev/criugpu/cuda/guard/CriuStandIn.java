package dev.criugpu.cuda.guard;

import dev.criugpu.cuda.backend.CliBackend;
import dev.criugpu.cuda.state.CudaState;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Plays criu's part in its own JVM: starts the real detached watchdog (cuda-checkpoint stand-in as backend), hands
 * it a task, "checkpoints" that task, says {@code armed}, then waits to be killed.
 * Arguments: fake-cuda-checkpoint-path log-file task-pid task-start-time
 */
public final class CriuStandIn {
    public static void main(String[] args) throws Exception {
        Path cli = Path.of(args[0]);
        int pid = Integer.parseInt(args[2]);
        WatchdogLink w = DetachedWatchdog.starter(CliBackend.open(cli), Path.of(args[1]), 0).start();
        w.guard(new GuardedTask(pid, Long.parseLong(args[3]), CudaState.RUNNING));
        Files.writeString(cli.resolveSibling("state-" + pid), "checkpointed\n");
        w.awaitReady(20_000);
        System.out.println("armed");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}

package dev.criugpu.cuda.agent;

import dev.criugpu.cuda.state.CudaState;

import java.nio.file.Path;
import java.util.List;

/**
 * Plays criu's part in a JVM of its own: starts the real CUDA agent (cuda-checkpoint stand-in as its backend), hands
 * it a task, locks and checkpoints that task through it, says {@code armed}, then waits to be killed.
 * Arguments: fake-cuda-checkpoint-path (unused: found in PATH) log-file task-pid task-start-time
 */
public final class CriuStandIn {
    public static void main(String[] args) throws Exception {
        int pid = Integer.parseInt(args[2]);
        dev.criugpu.api.LauncherForTests.install();
        // cuda-checkpoint comes from PATH, as in criu; the test puts the stand-in's folder there
        AgentClient agent = AgentClient.launch("cli", 0, List.of(), false).logTo(Path.of(args[1]));
        if (agent.restoreThread(pid).isEmpty()) throw new IllegalStateException("no CUDA in " + pid);
        agent.watch(new WatchedTask(pid, Long.parseLong(args[3]), CudaState.RUNNING));
        agent.lock(pid, 1000);
        agent.checkpoint(pid);
        System.out.println("armed " + agent.describe());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}

package dev.criugpu.cuda.agent;

import dev.criugpu.api.sys.ProcStat;
import dev.criugpu.cuda.state.CudaState;

/**
 * A task the agent answers for: its pid, its /proc start time (a pid reused by another process is not it), and
 * the CUDA state it had before the dump, to which it must go back if it outlives criu. criu tells the agent of it in a
 * {@code task} line ({@link AgentProtocol}).
 */
public record WatchedTask(int pid, long startTime, CudaState initial) implements AgentProtocol.ToAgent {

    /** Whether the very process is still there and not a zombie. */
    boolean alive() {
        return ProcStat.alive(pid, startTime);
    }
}

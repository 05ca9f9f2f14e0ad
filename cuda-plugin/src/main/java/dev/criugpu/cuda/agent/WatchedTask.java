package dev.criugpu.cuda.agent;

import dev.criugpu.api.sys.ProcStat;
import dev.criugpu.cuda.state.CudaState;

/**
 * A task the agent answers for: its pid, its /proc start time (a pid reused by another process is not it), and
 * the CUDA state it had before the dump, to which it must go back if it outlives criu.
 */
public record WatchedTask(int pid, long startTime, CudaState initial) {

    /** The watch message's form: {@code task PID STARTTIME STATE}. */
    String line() {
        return "task " + pid + " " + startTime + " " + initial.word();
    }

    static WatchedTask parse(String[] f) {
        if (f.length != 4 || !f[0].equals("task")) throw new IllegalArgumentException("not 'task PID START STATE'");
        CudaState s = CudaState.ofWord(f[3]).orElseThrow(() -> new IllegalArgumentException("unknown state " + f[3]));
        return new WatchedTask(Integer.parseInt(f[1]), Long.parseLong(f[2]), s);
    }

    /** Whether the very process is still there and not a zombie. */
    boolean alive() {
        return ProcStat.alive(pid, startTime);
    }
}

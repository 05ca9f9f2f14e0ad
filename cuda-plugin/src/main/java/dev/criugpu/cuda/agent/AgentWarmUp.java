package dev.criugpu.cuda.agent;

import dev.criugpu.cuda.state.CudaState;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.List;

/**
 * A dump's first driver call made ahead, without a driver: every line of the agent protocol written and read, every
 * {@link AgentOp}'s codes used, a throwaway watch told each of its messages and saying a line, criu's side handed a
 * reply of each kind, and the agent's server loaded. criu's JVM runs it in the plugin's warm-up, the agent while it
 * waits for criu's first line, and the AOT cache's training run makes it, so the classes, lambdas and pattern switches
 * of that call are loaded and linked before the first PAUSE_DEVICES waits for them: without it, the first call (a
 * task's restore thread) took 43-59 ms against c561d08's 17-20 ms, whose training happened to load its protocol
 * classes (fake backend, BENCHMARKS session 14).
 */
public final class AgentWarmUp {
    private AgentWarmUp() {
    }

    public static void run() {
        AgentWatch watch = new AgentWatch(-1, 0, 0, 0, new PrintStream(OutputStream.nullOutputStream()));
        for (AgentProtocol.ToAgent m : toAgent()) watch.told(AgentProtocol.toAgent(AgentProtocol.encode(m)));
        for (AgentProtocol.ToCriu m : toCriu()) AgentConnection.deliver(AgentProtocol.toCriu(AgentProtocol.encode(m)), new HashMap<>());
        AgentOp.RESTORE_TID.reply("none");
        AgentOp.STATE.reply(CudaState.RUNNING.word());
        AgentOp.named(AgentOp.CHECKPOINT.word());
        AgentServer.class.getName();
    }

    /** One line of every kind criu's JVM sends (a call of each coded argument). */
    static List<AgentProtocol.ToAgent> toAgent() {
        return List.of(new AgentProtocol.ArgsLine(List.of("--backend", "auto")), new AgentProtocol.LogLine(),
                AgentOp.LOCK.call(1, 1, 1), AgentOp.RESTORE.call(2, 1, List.of()), new WatchedTask(1, 0, CudaState.RUNNING),
                new AgentProtocol.Returned(1), new BlockedThread(1, 1, 0), new AgentProtocol.Unblocked(1, 1),
                new AgentProtocol.Done());
    }

    /** One line of every kind the agent sends. */
    static List<AgentProtocol.ToCriu> toCriu() {
        return List.of(new AgentProtocol.Ready("driver", 1, false, 1, "-"), new AgentProtocol.Unusable("-"),
                new AgentProtocol.Ok(1, null), new AgentProtocol.Err(1, 1, "-"));
    }
}

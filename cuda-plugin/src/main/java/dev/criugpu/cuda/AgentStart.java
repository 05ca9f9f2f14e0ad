package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.HelperProcess;
import dev.criugpu.api.sys.TrustedPaths;
import dev.criugpu.cuda.agent.AgentClient;
import dev.criugpu.cuda.agent.CudaAgent;
import dev.criugpu.cuda.config.PluginConfig;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * A dump's CUDA agent as it was launched: the client, the backend it was asked to open, and why it runs without the
 * plugin dir's AOT cache, if it does (said in criu's log once there is one). It keeps watching a returned task for
 * longer than a lock criu started could still take.
 */
record AgentStart(AgentClient client, String backend, Optional<String> aotProblem, long settleMs, List<String> jvmOptions) {

    static AgentStart launch(PluginConfig config, Path pluginDir, int lockTimeoutMs) {
        String backend = config.backend().name().toLowerCase(Locale.ROOT);
        Options o = Options.of(pluginDir);
        long settleMs = lockTimeoutMs + 2000L;
        return new AgentStart(AgentClient.launch(backend, settleMs, o.options, true), backend, o.problem, settleMs, o.options);
    }

    /** The agent's JVM options beyond its own: the plugin dir's AOT cache, or why it goes without. */
    private record Options(List<String> options, Optional<String> problem) {
        static Options of(Path pluginDir) {
            Path aot = pluginDir == null ? null : pluginDir.resolve("java/criu-gpu.aot");
            if (aot == null || !Files.exists(aot, LinkOption.NOFOLLOW_LINKS)) return new Options(List.of(), Optional.empty());
            try {
                return new Options(List.of("-XX:AOTCache=" + TrustedPaths.requireSafeToLoad(aot)), Optional.empty());
            } catch (CriuException e) {
                return new Options(List.of(), Optional.of(e.getMessage()));
            }
        }
    }

    /** The command the shim starts the agent with, before criu's JVM: {@link CudaPlugin#earlyHelper}. */
    static List<String> earlyCommand(Path pluginDir) {
        return HelperProcess.command(Path.of(System.getProperty("java.home")), CudaAgent.class.getName(),
                AgentClient.jvmOptions(Options.of(pluginDir).options), CudaAgent.earlyCommandArgs());
    }

    /** Another agent like this one: the dump's first agent died. */
    AgentClient again() {
        return AgentClient.launch(backend, settleMs, jvmOptions, false);
    }

    /** The dump did not take the agent: it finds no one to serve and ends. */
    void giveUp() {
        try {
            client.done();
        } catch (IOException e) {
            // it has gone already
        }
    }
}

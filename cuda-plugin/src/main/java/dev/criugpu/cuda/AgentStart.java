package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.sys.TrustedPaths;
import dev.criugpu.cuda.agent.AgentClient;
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
        Path aot = pluginDir == null ? null : pluginDir.resolve("java/criu-gpu.aot");
        List<String> options = List.of();
        Optional<String> problem = Optional.empty();
        if (aot != null && Files.exists(aot, LinkOption.NOFOLLOW_LINKS)) {
            try {
                options = List.of("-XX:AOTCache=" + TrustedPaths.requireSafeToLoad(aot));
            } catch (CriuException e) {
                problem = Optional.of(e.getMessage());
            }
        }
        long settleMs = lockTimeoutMs + 2000L;
        return new AgentStart(AgentClient.launch(backend, settleMs, options), backend, problem, settleMs, options);
    }

    /** Another agent like this one: the dump's first agent died. */
    AgentClient again() {
        return AgentClient.launch(backend, settleMs, jvmOptions);
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

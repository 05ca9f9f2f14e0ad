package dev.criugpu.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 2.1: on a host without GPUs the plugins' native gate says no. A CPU process is dumped and restored with
 * our plugin dir loaded, each plugin logs why it is disabled, no JVM is loaded, and the image claims no plugin.
 */
@ExtendWith(DockerRequired.class)
class PluginGateIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    @Test
    void cpuProcessDumpsAndRestoresWithPluginsDisabledAndNoJvm(CriuContainer criu) {
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/gate");
        CriuRun dump = CriuCommand.dump(counter.rootPid(), "/tmp/gate.img").withPlugins()
                .env("LD_DEBUG", "files").runIn(criu).orFail();
        List<Long> atDump = counter.awaitDumped();
        assertPluginsDisabledWithoutJvm(dump, "no NVIDIA GPU\\b.+", "no AMD GPU\\b.+");

        String inventory = criu.exec("crit", "show", "/tmp/gate.img/inventory.img").orFail().stdout();
        for (String plugin : HookTrace.PLUGINS) {
            assertFalse(inventory.contains(plugin), "inventory of a CPU-only dump lists " + plugin + ":\n" + inventory);
        }

        CriuRun restore = CriuCommand.restore("/tmp/gate.img").withPlugins()
                .env("LD_DEBUG", "files").runIn(criu).orFail();
        // On restore the image decides first: its inventory lists no plugin, whatever the hardware.
        assertPluginsDisabledWithoutJvm(restore, "\\S.*", "\\S.*");
        counter.assertContinuedFrom(atDump);
        counter.kill();
    }

    private static void assertPluginsDisabledWithoutJvm(CriuRun run, String cudaReason, String amdReason) {
        String ldDebug = run.result().stderr();
        // Positive control: LD_DEBUG=files does report the plugins' own loading, so a missing libjvm means something.
        assertTrue(ldDebug.contains(CriuContainer.PLUGIN_DIR + "/cuda_plugin.so"),
                "LD_DEBUG output does not show cuda_plugin.so being loaded:\n" + tail(ldDebug));
        assertTrue(ldDebug.contains(CriuContainer.PLUGIN_DIR + "/amdgpu_plugin.so"),
                "LD_DEBUG output does not show amdgpu_plugin.so being loaded:\n" + tail(ldDebug));
        List<String> jvmLoads = ldDebug.lines().filter(l -> l.contains("libjvm")).toList();
        assertEquals(List.of(), jvmLoads, "criu loaded the JVM although both plugins are disabled");

        assertOneLine(run, "cuda_plugin: disabled: " + cudaReason);
        assertOneLine(run, "amdgpu_plugin: disabled: " + amdReason);
        assertEquals(List.of(), run.logLinesContaining("entered Java"), "a disabled plugin entered Java");
    }

    private static void assertOneLine(CriuRun run, String regex) {
        List<String> lines = run.logLinesMatching(Pattern.compile(regex));
        assertEquals(1, lines.size(), "expected one line matching '" + regex + "'; plugin lines in criu's log:\n"
                + String.join("\n", run.logLinesContaining("plugin")));
    }

    private static String tail(String s) {
        List<String> lines = s.lines().toList();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }
}

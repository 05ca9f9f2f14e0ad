package dev.criugpu.cli;

import dev.criugpu.api.CriuPlugin;
import dev.criugpu.api.Hook;
import dev.criugpu.api.Plugins;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Each plugin's {@link CriuPlugin#hooks()}, from which the shim's build takes its mask ({@code HookTable mask NAME}): only
 * hooks criu hands plugins (never the shim's own), and every main-process hook it lists implemented by the plugin
 * itself, not left to CriuPlugin's "not supported" default. Here because cli is the module that has both plugins on
 * its class path.
 */
class PluginHookMasksTest {
    @Test
    void everyPluginServesWhatItRegisters() throws Exception {
        // by name: plugin-api's test jar (its test helpers) registers a recording plugin of its own on this class path
        List<CriuPlugin> plugins = List.of(Plugins.named("amdgpu_plugin").orElseThrow(), Plugins.named("cuda_plugin").orElseThrow());
        for (CriuPlugin p : plugins) {
            for (Hook h : p.hooks()) {
                assertNotEquals(Hook.Context.SHIM, h.context, p.name() + " lists the shim's own " + h);
                if (h.context != Hook.Context.MAIN) continue;
                var method = java.util.Arrays.stream(p.getClass().getMethods()).filter(m -> m.getName().equals(h.javaMethod))
                        .findFirst().orElse(null);
                assertNotNull(method, p.name() + ": " + h.javaMethod);
                assertNotEquals(CriuPlugin.class, method.getDeclaringClass(), p.name() + " registers " + h
                        + " but leaves " + h.javaMethod + " to CriuPlugin's default");
            }
        }
    }
}

package dev.criugpu.cli;

import dev.criugpu.api.CriuPlugin;
import dev.criugpu.api.Hook;
import dev.criugpu.api.Plugins;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
        List<CriuPlugin> plugins = Plugins.all();
        assertEquals(List.of("amdgpu_plugin", "cuda_plugin"), plugins.stream().map(CriuPlugin::name).sorted().toList());
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

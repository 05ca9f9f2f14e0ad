package dev.criugpu.cli;

import dev.criugpu.api.CriuPlugin;
import dev.criugpu.api.Hook;
import dev.criugpu.api.Plugins;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each plugin's {@link CriuPlugin#hooks()} against the mask its shim is built with (native/Makefile, NAME_MASK for
 * name_plugin). Bootstrap refuses a mismatch at run time; this finds it at build time. Here because cli is the module
 * that has both plugins on its class path.
 */
class PluginHookMasksTest {
    private static final Path MAKEFILE = Path.of(System.getProperty("criugpu.native.dir", "../native"), "Makefile");

    @Test
    void everyPluginsHooksAreTheMaskItsShimIsBuiltWith() throws IOException {
        assertTrue(Files.isRegularFile(MAKEFILE), MAKEFILE.toAbsolutePath() + " does not exist");
        String makefile = Files.readString(MAKEFILE);
        List<CriuPlugin> plugins = Plugins.all();
        assertEquals(List.of("amdgpu_plugin", "cuda_plugin"), plugins.stream().map(CriuPlugin::name).sorted().toList());
        for (CriuPlugin p : plugins) {
            String variable = p.name().replace("_plugin", "").toUpperCase(Locale.ROOT) + "_MASK";
            Matcher m = Pattern.compile("(?m)^" + variable + "\\s*=\\s*(0x[0-9a-fA-F]+)\\s*$").matcher(makefile);
            assertTrue(m.find(), "no " + variable + " in " + MAKEFILE);
            assertEquals(m.group(1).toLowerCase(Locale.ROOT), "0x" + Integer.toHexString(Hook.mask(p.hooks())),
                    p.name() + ".hooks() " + p.hooks() + " vs " + variable);
        }
    }
}

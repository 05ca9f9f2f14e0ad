package dev.criugpu.api;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Optional;

/**
 * Writes {@code java/<plugin>.helper} for each plugin with an {@link CriuPlugin#earlyHelper}, one word per line, and
 * removes it for the others: run by native/make-aot.sh with the JDK and class path the plugins run with.
 * Usage: EarlyHelpers PLUGIN_DIR
 */
public final class EarlyHelpers {
    private EarlyHelpers() {
    }

    public static void main(String[] args) throws IOException {
        Path pluginDir = Path.of(args[0]).toAbsolutePath();
        for (CriuPlugin plugin : Plugins.all()) {
            Path file = pluginDir.resolve("java/" + plugin.name() + ".helper");
            Optional<List<String>> command = plugin.earlyHelper(pluginDir);
            if (command.isEmpty()) {
                Files.deleteIfExists(file);
                continue;
            }
            if (command.get().stream().anyMatch(w -> w.isEmpty() || w.indexOf('\n') >= 0)) {
                throw new IllegalArgumentException(plugin.name() + ": a helper's word cannot be empty or hold a line break");
            }
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            Files.writeString(tmp, String.join("\n", command.get()) + "\n");
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            System.out.println("early helper of " + plugin.name() + ": " + file);
        }
    }
}

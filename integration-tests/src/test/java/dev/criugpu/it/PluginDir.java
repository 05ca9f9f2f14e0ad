package dev.criugpu.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The plugin directory native/ assembles ({@code native/target/criu-lib}): the two plugin .so files and
 * {@code java/criu-gpu.cfg}, whose {@code java.home} names the JDK the plugins start.
 */
public record PluginDir(Path dir, Map<String, String> config) {
    public static final String CONFIG = "java/criu-gpu.cfg";

    /** The plugin dir the build made, or an AssertionError saying what is missing and how to build it. */
    public static PluginDir fromBuild() {
        Path dir = buildPath();
        for (String required : new String[]{"cuda_plugin.so", "amdgpu_plugin.so", CONFIG}) {
            if (!Files.isRegularFile(dir.resolve(required))) {
                throw new AssertionError("plugin dir " + dir + " lacks " + required
                        + ": build it first (mvn -B install at the repository root builds native/ before these tests)");
            }
        }
        return new PluginDir(dir, readConfig(dir.resolve(CONFIG)));
    }

    /** Where the build puts the plugin dir (native/target/criu-lib), built or not. */
    public static Path buildPath() {
        return Path.of(System.getProperty("criugpu.criu.lib.dir", "../native/target/criu-lib")).toAbsolutePath().normalize();
    }

    /** The JDK named by {@code java.home} in criu-gpu.cfg. */
    public Path javaHome() {
        String home = config.get("java.home");
        if (home == null || home.isBlank()) {
            throw new AssertionError(dir.resolve(CONFIG) + " has no java.home line");
        }
        Path p = Path.of(home);
        if (!p.isAbsolute() || !Files.isDirectory(p)) {
            throw new AssertionError(dir.resolve(CONFIG) + ": java.home=" + home + " is not an existing absolute directory");
        }
        return p;
    }

    private static Map<String, String> readConfig(Path file) {
        Map<String, String> entries = new LinkedHashMap<>();
        try {
            for (String line : Files.readAllLines(file)) {
                String l = line.strip();
                if (l.isEmpty() || l.startsWith("#")) continue;
                int eq = l.indexOf('=');
                if (eq <= 0) throw new AssertionError(file + ": not a key=value line: " + line);
                entries.put(l.substring(0, eq).strip(), l.substring(eq + 1).strip());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
        return entries;
    }
}

package dev.criugpu.cli;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuPlugin;
import dev.criugpu.api.Diagnosis;
import dev.criugpu.api.Plugins;
import dev.criugpu.api.sys.TrustedPaths;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code criu-gpu doctor}: per plugin, whether criu would enable it on this host and why; and whether the
 * plugin directory can start its JVM.
 */
final class Doctor {
    private Doctor() {
    }

    static int run(String[] args, PrintStream out) {
        Path pluginDir = pluginDir();
        out.println("criu-gpu " + Version.get());
        out.println("plugin dir: " + (pluginDir == null ? "(unknown: run through bin/criu-gpu)" : pluginDir));
        List<String> problems = new ArrayList<>(pluginDir == null ? List.of() : checkPluginDir(pluginDir, out));
        for (CriuPlugin plugin : Plugins.all()) {
            Diagnosis d = plugin.diagnose();
            out.println(d.plugin() + ": " + (d.enabled() ? "enabled" : "disabled") + " — " + d.reason());
            if (forced()) out.println("  (CRIU_GPU_PLUGIN_FORCE=1 is set: criu will enable it regardless)");
            for (String detail : d.details()) out.println("  " + detail);
        }
        for (String p : problems) out.println("problem: " + p);
        return problems.isEmpty() ? 0 : 1;
    }

    private static boolean forced() {
        return "1".equals(System.getenv("CRIU_GPU_PLUGIN_FORCE"));
    }

    /** The plugin dir bin/criu-gpu was started from (it passes -Dcriu.gpu.dir). */
    static Path pluginDir() {
        String dir = System.getProperty("criu.gpu.dir");
        return dir == null ? null : Path.of(dir);
    }

    static Map<String, String> readConfig(Path cfg) throws IOException {
        Map<String, String> m = new LinkedHashMap<>();
        for (String line : Files.readAllLines(cfg)) {
            int eq = line.indexOf('=');
            if (line.startsWith("#") || eq < 0) continue;
            m.putIfAbsent(line.substring(0, eq), line.substring(eq + 1));
        }
        return m;
    }

    private static List<String> checkPluginDir(Path dir, PrintStream out) {
        List<String> problems = new ArrayList<>();
        for (String f : List.of("cuda_plugin.so", "amdgpu_plugin.so", "java/jvm.options")) {
            if (!Files.isRegularFile(dir.resolve(f))) problems.add(dir.resolve(f) + " is missing");
        }
        Path cfg = dir.resolve("java/criu-gpu.cfg");
        try {
            String home = System.getenv().getOrDefault("CRIU_GPU_JAVA_HOME", readConfig(cfg).get("java.home"));
            if (home == null) {
                problems.add(cfg + " names no java.home");
            } else {
                Path javaHome = dir.resolve("java").resolve(home);
                Path libjvm = javaHome.resolve("lib/server/libjvm.so");
                out.println("JVM for criu: " + javaHome + (Files.isRegularFile(libjvm) ? "" : " (libjvm.so MISSING)"));
                if (!Files.isRegularFile(libjvm)) problems.add(libjvm + " is missing: criu cannot start Java");
            }
            Path aot = dir.resolve("java/criu-gpu.aot");
            out.println("AOT cache: " + (Files.isRegularFile(aot) ? aot : "none (JVM starts slower)"));
        } catch (IOException e) {
            problems.add("cannot read " + cfg + ": " + e.getMessage());
        }
        problems.addAll(untrusted(dir));
        return problems;
    }

    /**
     * What criu, as root, would refuse to load (the shim's check): the settings, the JVM options and every absolute
     * path they name, the JDK's libjvm.so.
     */
    static List<String> untrusted(Path dir) {
        Path options = dir.resolve("java/jvm.options");
        List<Path> files = new ArrayList<>(List.of(dir.resolve("java/criu-gpu.cfg"), options));
        try {
            for (String line : Files.readAllLines(options)) {
                if (line.startsWith("#")) continue;
                if (line.startsWith(JAVA_HOME_OPTION)) {
                    files.add(Path.of(line.substring(JAVA_HOME_OPTION.length()), "lib/server/libjvm.so"));
                    continue;
                }
                for (String word : line.split("[:=]")) {
                    if (word.startsWith("/")) files.add(Path.of(word));
                }
            }
        } catch (IOException e) {
            return List.of("cannot read " + options + ": " + e.getMessage());
        }
        List<String> problems = new ArrayList<>();
        for (Path f : files) {
            try {
                TrustedPaths.requireSafeToLoad(f);
            } catch (CriuException e) {
                problems.add(e.getMessage());
            }
        }
        return problems;
    }

    private static final String JAVA_HOME_OPTION = "-Dcriu.gpu.java.home=";
}

package dev.criugpu.api.sys;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Runs a class's main in a new JVM with criu's heap (-Xmx64m, native/jvm-options.cfg) and this test's class path. */
public record SmallHeapJvm(int exitCode, String output) {
    public static final String HEAP = "-Xmx64m";

    public static SmallHeapJvm run(Class<?> main, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                HEAP, "-XX:+UseSerialGC", "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return new SmallHeapJvm(p.waitFor(), out);
    }
}

package dev.criugpu.amdgpu.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** The C programs src/test/c/build.sh built into target/native (system property amdgpu.native.dir). */
public final class NativeTestPrograms {
    private NativeTestPrograms() {
    }

    public static Path dir() {
        String d = System.getProperty("amdgpu.native.dir");
        if (d == null) d = "target/native";
        return Path.of(d);
    }

    public static Path path(String name) {
        Path p = dir().resolve(name);
        if (!Files.isRegularFile(p)) {
            throw new IllegalStateException(p + " was not built (src/test/c/build.sh runs in generate-test-resources)");
        }
        return p;
    }

    /** Runs a built program and returns its stdout; fails unless it exits 0 within 30 s. */
    public static String runForOutput(String name) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(path(name).toString()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(name + " did not finish");
        }
        if (p.exitValue() != 0) throw new IllegalStateException(name + " exited " + p.exitValue());
        return new String(out, StandardCharsets.UTF_8);
    }
}

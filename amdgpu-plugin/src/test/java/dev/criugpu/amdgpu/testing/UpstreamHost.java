package dev.criugpu.amdgpu.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@code upstream-host} (src/test/c/upstream_host.c): criu's stand-in around upstream's own amdgpu plugin, its
 * devices, sysfs and libdrm served by the simulator, driven by a scenario file (see the C file for its lines).
 */
public final class UpstreamHost {
    private UpstreamHost() {
    }

    /**
     * What one run printed: one line per result ({@code hook <what> = <rc>}, {@code restore <id> = <rc>},
     * {@code vma <i> = <rc> <minor> <offset>}, ...), and upstream's log lines.
     */
    public record Run(List<String> out, String log) {
        /** The value after "{@code key} " or "{@code key} = " of the first line that has it. */
        public Optional<String> value(String key) {
            for (String l : out) {
                if (l.startsWith(key + " = ")) return Optional.of(l.substring(key.length() + 3));
                if (l.startsWith(key + " ")) return Optional.of(l.substring(key.length() + 1));
            }
            return Optional.empty();
        }

        public String require(String key) {
            return value(key).orElseThrow(() -> new AssertionError("upstream-host printed no " + key + ":\n" + this));
        }

        public int hook(String what) {
            return Integer.parseInt(require("hook " + what));
        }

        @Override
        public String toString() {
            return String.join("\n", out) + "\n--- upstream's log ---\n" + log;
        }
    }

    /** Runs {@code upstream-host mode plugin scenario} with {@code env} added to the environment. */
    public static Run run(String mode, Path plugin, List<String> scenario, Path scenarioFile, Map<String, String> env) {
        try {
            Files.write(scenarioFile, scenario);
            ProcessBuilder pb = new ProcessBuilder(NativeTestPrograms.path("upstream-host").toString(), mode,
                    plugin.toString(), scenarioFile.toString());
            pb.environment().putAll(env);
            Path log = scenarioFile.resolveSibling(scenarioFile.getFileName() + ".log");
            pb.redirectError(log.toFile());
            Process p = pb.start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("upstream-host " + mode + " did not finish:\n" + out);
            }
            Run run = new Run(out.lines().toList(), Files.readString(log));
            if (p.exitValue() != 0) throw new AssertionError("upstream-host " + mode + " exited " + p.exitValue() + ":\n" + run);
            return run;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}

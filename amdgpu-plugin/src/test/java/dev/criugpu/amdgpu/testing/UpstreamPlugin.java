package dev.criugpu.amdgpu.testing;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * criu 4.2.1's own amdgpu plugin, the compatibility oracle: built once per test JVM by
 * {@code integration-tests/upstream/build-upstream.sh} (system property {@code upstream.build.script}) from Debian's
 * criu source package into {@code upstream.dir} (target/upstream); nothing of it is in the repository. When the
 * source package cannot be fetched (the script's exit status 3) the tests that need it are skipped, each, with a
 * banner on stderr, unless the environment variable {@code CI} is set: there they fail.
 *
 * @param plugin   upstream's {@code amdgpu_plugin.so}
 * @param protoDir the folder of upstream's {@code criu-amdgpu.proto} (for {@code protoc --decode})
 * @param version  what the build says it built
 */
public record UpstreamPlugin(Path plugin, Path protoDir, String version) {
    public static final int SOURCE_UNAVAILABLE = 3;

    private static UpstreamPlugin built;
    private static String failure;

    /**
     * The built plugin, or empty when its source cannot be fetched (then a banner on stderr says that nothing was
     * compared; tests skip with {@link #skipUnlessBuilt}). With {@code CI} set that is an error instead.
     */
    public static synchronized Optional<UpstreamPlugin> get() {
        if (built == null && failure == null) {
            build();
            if (built == null) {
                if (System.getenv("CI") != null) {
                    throw new AssertionError("CI is set and upstream criu 4.2.1 could not be fetched: " + failure);
                }
                System.err.println("\n" + "#".repeat(100) + "\n# SKIPPED: the compatibility tests against upstream criu's"
                        + " amdgpu plugin did NOT run.\n# " + failure.replace("\n", "\n# ") + "\n" + "#".repeat(100) + "\n");
            }
        }
        return Optional.ofNullable(built);
    }

    /** Skips the calling test unless the plugin was built. */
    public static void skipUnlessBuilt() {
        Assumptions.assumeTrue(get().isPresent(), () -> "SKIPPED, nothing compared: upstream criu 4.2.1 could not be"
                + " fetched: " + failure);
    }

    private static void build() {
        Path script = Path.of(System.getProperty("upstream.build.script",
                "../integration-tests/upstream/build-upstream.sh"));
        Path out = Path.of(System.getProperty("upstream.dir", "target/upstream"));
        String output;
        int rc;
        try {
            Process p = new ProcessBuilder("bash", script.toString(), out.toString()).redirectErrorStream(true).start();
            p.getOutputStream().close();
            output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(60, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                throw new AssertionError(script + " did not finish within an hour");
            }
            rc = p.exitValue();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        if (rc == SOURCE_UNAVAILABLE) {
            failure = output;
            return;
        }
        if (rc != 0) throw new AssertionError(script + " failed (exit " + rc + "):\n" + output);
        try {
            Path plugin = out.resolve("amdgpu_plugin.so");
            Path proto = out.resolve("src/plugins/amdgpu");
            if (!Files.isRegularFile(plugin) || !Files.isRegularFile(proto.resolve("criu-amdgpu.proto"))) {
                throw new AssertionError(script + " succeeded but left no " + plugin + " or upstream's proto:\n" + output);
            }
            built = new UpstreamPlugin(plugin, proto, Files.readString(out.resolve("VERSION")).strip());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

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
 * An upstream amdgpu plugin, a compatibility oracle, built once per test JVM from source fetched at test time;
 * nothing of it is in the repository:
 * <ul>
 * <li>{@link #get()}: criu 4.2.1's, by {@code integration-tests/upstream/build-upstream.sh} (system property
 * {@code upstream.build.script}) from Debian's criu source package into {@code upstream.dir} (target/upstream);</li>
 * <li>{@link #criuDev()}: criu-dev's at a pinned commit, by {@code build-criu-dev.sh} ({@code criudev.build.script})
 * into {@code criudev.dir} (target/upstream-criu-dev), from the git directory {@code CRIU_DEV_GIT} or GitHub.</li>
 * </ul>
 * When the source cannot be fetched (the script's exit status 3) the tests that need it are skipped, each, with a
 * banner on stderr, unless the environment variable {@code CI} is set: there criu 4.2.1's fail (Debian's mirror is
 * in reach), while criu-dev's (GitHub only) are skipped and the test command's end names them NOT RUN.
 *
 * @param plugin   upstream's {@code amdgpu_plugin.so}
 * @param protoDir the folder of upstream's {@code criu-amdgpu.proto} (for {@code protoc --decode})
 * @param version  what the build says it built
 */
public record UpstreamPlugin(Path plugin, Path protoDir, String version) {
    public static final int SOURCE_UNAVAILABLE = 3;

    private static final Build V4_2_1 = new Build("upstream criu 4.2.1", "upstream.build.script",
            "../integration-tests/upstream/build-upstream.sh", "upstream.dir", "target/upstream", true);
    // criu-dev's source is on GitHub alone, which hosts with only package registries in reach (this project's CI
    // among them) cannot fetch: there its tests are reported NOT RUN instead of failing the build
    private static final Build CRIU_DEV = new Build("criu-dev", "criudev.build.script",
            "../integration-tests/upstream/build-criu-dev.sh", "criudev.dir", "target/upstream-criu-dev", false);

    /**
     * criu 4.2.1's plugin, or empty when its source cannot be fetched (then a banner on stderr says that nothing was
     * compared; tests skip with {@link #skipUnlessBuilt}). With {@code CI} set that is an error instead.
     */
    public static Optional<UpstreamPlugin> get() {
        return V4_2_1.get();
    }

    /** Skips the calling test unless criu 4.2.1's plugin was built. */
    public static void skipUnlessBuilt() {
        V4_2_1.skipUnlessBuilt();
    }

    /** criu-dev's plugin, as {@link #get()}. */
    public static Optional<UpstreamPlugin> criuDev() {
        return CRIU_DEV.get();
    }

    /** Skips the calling test unless criu-dev's plugin was built. */
    public static void skipUnlessCriuDevBuilt() {
        CRIU_DEV.skipUnlessBuilt();
    }

    private static final class Build {
        private final String label;
        private final String scriptProperty;
        private final String defaultScript;
        private final String dirProperty;
        private final String defaultDir;
        private final boolean requiredInCi;
        private UpstreamPlugin built;
        private String failure;

        Build(String label, String scriptProperty, String defaultScript, String dirProperty, String defaultDir,
              boolean requiredInCi) {
            this.requiredInCi = requiredInCi;
            this.label = label;
            this.scriptProperty = scriptProperty;
            this.defaultScript = defaultScript;
            this.dirProperty = dirProperty;
            this.defaultDir = defaultDir;
        }

        synchronized Optional<UpstreamPlugin> get() {
            if (built == null && failure == null) {
                build();
                if (built == null) {
                    if (requiredInCi && System.getenv("CI") != null) {
                        throw new AssertionError("CI is set and " + label + " could not be fetched: " + failure);
                    }
                    System.err.println("\n" + "#".repeat(100) + "\n# SKIPPED: the compatibility tests against " + label
                            + "'s amdgpu plugin did NOT run.\n# " + failure.replace("\n", "\n# ") + "\n" + "#".repeat(100) + "\n");
                }
            }
            return Optional.ofNullable(built);
        }

        void skipUnlessBuilt() {
            Assumptions.assumeTrue(get().isPresent(), () -> "SKIPPED, nothing compared: " + label + " could not be"
                    + " fetched: " + failure);
        }

        private void build() {
            Path script = Path.of(System.getProperty(scriptProperty, defaultScript));
            Path out = Path.of(System.getProperty(dirProperty, defaultDir));
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
}

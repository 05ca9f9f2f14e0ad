package dev.criugpu.cuda.job;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The criu_gpu wheel the build makes (cuda-plugin/build-wheel.py, into target/python, the same way as the plugin
 * dir's python/): a valid wheel of the plugin's version that pip installs into a fresh venv without an index, whose
 * import prints nothing next to a plugin of its version (or none) and one line next to a plugin of another.
 */
class CriuGpuWheelTest {
    private static final String MAVEN_VERSION = System.getProperty("criu.gpu.version");
    private static Path venv;

    /** Maven's version in PEP 440's spelling, as build-wheel.py writes it. */
    private static String pep440() {
        return MAVEN_VERSION.replaceFirst("-SNAPSHOT$", ".dev0");
    }

    private static Path wheel() {
        return Path.of("target/python/criu_gpu-" + pep440() + "-py3-none-any.whl").toAbsolutePath();
    }

    record Run(int status, String stdout, String stderr) {}

    private static Run run(Path cwd, Map<String, String> env, String... command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(cwd.toFile());
        pb.environment().remove("PYTHONPATH");
        pb.environment().remove("CRIU_GPU_PLUGIN_DIR");
        pb.environment().put("PIP_DISABLE_PIP_VERSION_CHECK", "1");
        pb.environment().putAll(env);
        Path out = Files.createTempFile("criu-gpu-wheel", ".out");
        Path err = Files.createTempFile("criu-gpu-wheel", ".err");
        try {
            Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail(String.join(" ", command) + " took over 120 s");
            }
            return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    private static Run ok(Path cwd, String... command) throws Exception {
        Run r = run(cwd, Map.of(), command);
        assertEquals(0, r.status(), String.join(" ", command) + ":\n" + r.stdout() + r.stderr());
        return r;
    }

    /** A fresh venv (python3 -m venv, with pip: Debian's python3-venv) with the wheel installed by pip, no index. */
    @BeforeAll
    static void installTheWheelIntoAFreshVenv(@TempDir Path dir) throws Exception {
        assertNotNull(MAVEN_VERSION, "no criu.gpu.version: run through Maven (cuda-plugin/pom.xml sets it)");
        assertTrue(Files.isRegularFile(wheel()), wheel() + " is missing: the build (process-resources) makes it");
        venv = dir.resolve("venv");
        Run made = run(dir, Map.of(), "python3", "-m", "venv", venv.toString());
        assertEquals(0, made.status(), "python3 -m venv failed (on Debian/Ubuntu install python3-venv; "
                + "integration-tests/test-all.sh does):\n" + made.stdout() + made.stderr());
        ok(dir, venv.resolve("bin/pip").toString(), "install", "--no-index", "--no-deps", wheel().toString());
    }

    private static Run importIt(Path cwd, Path pluginDir) throws Exception {
        return run(cwd, Map.of("CRIU_GPU_PLUGIN_DIR", pluginDir.toString()), venv.resolve("bin/python").toString(),
                "-c", "import criu_gpu");
    }

    private static Path pluginDir(Path dir, String version) throws IOException {
        Path plugin = dir.resolve("plugin-" + version);
        Files.createDirectories(plugin.resolve("java"));
        Files.writeString(plugin.resolve("java/VERSION"), version + "\n");
        return plugin;
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void theInstalledPackageIsOfThePluginsVersionAndImportsSilently(@TempDir Path dir) throws Exception {
        Path plugin = pluginDir(dir, MAVEN_VERSION);
        Run r = run(dir, Map.of("CRIU_GPU_PLUGIN_DIR", plugin.toString()), venv.resolve("bin/python").toString(), "-c",
                "import criu_gpu; print(criu_gpu.__version__); print(criu_gpu.PLUGIN_VERSION); print(criu_gpu.__file__)");
        assertEquals(0, r.status(), r.stdout() + r.stderr());
        assertEquals("", r.stderr(), "import criu_gpu printed on stderr");
        List<String> lines = r.stdout().lines().toList();
        assertEquals(List.of(pep440(), MAVEN_VERSION), lines.subList(0, 2), r.stdout());
        assertTrue(Path.of(lines.get(2)).startsWith(venv), "imported from " + lines.get(2) + ", not the venv");

        Run plain = importIt(dir, plugin);
        assertEquals(new Run(0, "", ""), plain, "import criu_gpu next to a plugin of its version");
        assertEquals(new Run(0, "", ""), importIt(dir, dir.resolve("no-plugin-here")), "import criu_gpu without a plugin");
        Run shown = ok(dir, venv.resolve("bin/pip").toString(), "show", "criu_gpu");
        assertTrue(shown.stdout().contains("\nVersion: " + pep440() + "\n"), shown.stdout());
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void importNextToAPluginOfAnotherVersionSaysSoInOneLine(@TempDir Path dir) throws Exception {
        Run r = importIt(dir, pluginDir(dir, "0.0.1"));
        assertEquals(0, r.status(), r.stdout() + r.stderr());
        assertEquals("", r.stdout());
        List<String> lines = r.stderr().lines().toList();
        assertEquals(1, lines.size(), r.stderr());
        assertTrue(lines.get(0).matches("criu_gpu\\[\\d+\\]: this criu_gpu " + MAVEN_VERSION.replace(".", "\\.")
                + " is not for the plugin 0\\.0\\.1 \\(.*/java/VERSION\\): install the plugin's .*"), lines.get(0));
    }

    @Test
    void theWheelsRecordMatchesItsFiles() throws Exception {
        String distInfo = "criu_gpu-" + pep440() + ".dist-info/";
        Map<String, byte[]> files = new LinkedHashMap<>();
        try (ZipFile z = new ZipFile(wheel().toFile())) {
            for (ZipEntry e : Collections.list(z.entries())) {
                try (InputStream in = z.getInputStream(e)) {
                    files.put(e.getName(), in.readAllBytes());
                }
            }
        }
        assertEquals(List.of("criu_gpu/__init__.py", "criu_gpu/_version.py", distInfo + "METADATA",
                distInfo + "top_level.txt", distInfo + "WHEEL", distInfo + "RECORD"), new ArrayList<>(files.keySet()));
        String metadata = new String(files.get(distInfo + "METADATA"), StandardCharsets.UTF_8);
        assertTrue(metadata.contains("\nName: criu_gpu\nVersion: " + pep440() + "\n"), metadata);
        assertTrue(new String(files.get(distInfo + "WHEEL"), StandardCharsets.UTF_8).contains("Tag: py3-none-any\n"));
        List<String> record = new String(files.get(distInfo + "RECORD"), StandardCharsets.UTF_8).lines().toList();
        List<String> expected = new ArrayList<>();
        for (Map.Entry<String, byte[]> f : files.entrySet()) {
            if (f.getKey().endsWith("/RECORD")) {
                expected.add(f.getKey() + ",,");
                continue;
            }
            String hash = Base64.getUrlEncoder().withoutPadding()
                    .encodeToString(MessageDigest.getInstance("SHA-256").digest(f.getValue()));
            expected.add(f.getKey() + ",sha256=" + hash + "," + f.getValue().length);
        }
        assertEquals(expected, record);
        assertEquals(Files.readString(Path.of("src/main/python/criu_gpu/__init__.py")),
                new String(files.get("criu_gpu/__init__.py"), StandardCharsets.UTF_8), "the wheel's __init__.py");
    }
}

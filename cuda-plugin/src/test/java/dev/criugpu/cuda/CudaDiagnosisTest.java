package dev.criugpu.cuda;

import dev.criugpu.api.Diagnosis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** criu-gpu doctor reads the cuda.* keys of the criu-gpu.cfg of the plugin dir bin/criu-gpu names. */
class CudaDiagnosisTest {
    private final String savedDir = System.getProperty("criu.gpu.dir");

    @AfterEach
    void restoreProperty() {
        if (savedDir == null) System.clearProperty("criu.gpu.dir");
        else System.setProperty("criu.gpu.dir", savedDir);
    }

    private static Path pluginDir(Path dir, String cfg) throws IOException {
        Files.createDirectories(dir.resolve("java"));
        Files.writeString(dir.resolve("java/criu-gpu.cfg"), cfg);
        return dir;
    }

    @Test
    void aBadCudaKeyInThePluginDirsCfgIsReported(@TempDir Path dir) throws IOException {
        pluginDir(dir, "java.home=/opt/jdk\nclass.path=lib/a.jar\ncuda.backend=bogus\n");
        System.setProperty("criu.gpu.dir", dir.toString());

        Diagnosis d = new CudaPlugin().diagnose();

        assertFalse(d.enabled());
        assertEquals("bad configuration: " + dir.resolve("java/criu-gpu.cfg") + ":3='bogus': expected driver or cli",
                d.reason());
    }

    @Test
    void everyCudaKeyIsChecked(@TempDir Path dir) throws IOException {
        pluginDir(dir, "cuda.device-map=GPU-1\n");

        Diagnosis d = CudaDiagnosis.run(java.util.Map.of(), dir.resolve("java/criu-gpu.cfg"));

        assertFalse(d.enabled());
        assertEquals("bad configuration: " + dir.resolve("java/criu-gpu.cfg")
                + ":1: 'GPU-1' is not of the form oldUuid=newUuid", d.reason());
    }
}

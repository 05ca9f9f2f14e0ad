package dev.criugpu.cuda.config;

import dev.criugpu.cuda.gpu.GpuUuid;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PluginConfigTest {
    static final String A = "GPU-eea0d83f-ebcd-ac27-6b3e-bec2a19724e6";
    static final String B = "GPU-8f4022ba-e0cb-1298-286e-225c953a7feb";

    @Test
    void defaultsWithoutAnything() {
        PluginConfig c = PluginConfig.load(Map.of(), null);
        assertEquals(PluginConfig.BackendChoice.AUTO, c.backend());
        assertTrue(c.parallel());
        assertTrue(c.guard());
        assertTrue(c.deviceMap().isEmpty());
    }

    @Test
    void cfgFileThenEnvironment(@TempDir Path dir) throws IOException {
        Path cfg = dir.resolve("criu-gpu.cfg");
        Files.writeString(cfg, "# comment\njvm.options=-Xmx64m\ncuda.backend=cli\ncuda.parallel=0\ncuda.device-map=" + A + "=" + B + "\n");
        PluginConfig fromFile = PluginConfig.load(Map.of(), cfg);
        assertEquals(PluginConfig.BackendChoice.CLI, fromFile.backend());
        assertFalse(fromFile.parallel());
        assertEquals(Map.of(GpuUuid.parse(A), GpuUuid.parse(B)), fromFile.deviceMap());
        PluginConfig env = PluginConfig.load(Map.of("CRIU_CUDA_BACKEND", "driver", "CRIU_CUDA_TREAT_ABSENT", A), cfg);
        assertEquals(PluginConfig.BackendChoice.DRIVER, env.backend());
        assertEquals(Set.of(GpuUuid.parse(A)), env.treatAbsent());
    }

    @Test
    void badValuesNameWhereTheyCameFrom(@TempDir Path dir) throws IOException {
        var e = assertThrows(IllegalArgumentException.class, () -> PluginConfig.load(Map.of("CRIU_CUDA_BACKEND", "gpu"), null).backend());
        assertEquals("CRIU_CUDA_BACKEND='gpu': expected driver or cli", e.getMessage());
        Path cfg = dir.resolve("criu-gpu.cfg");
        Files.writeString(cfg, "cuda.parallel=maybe\n");
        e = assertThrows(IllegalArgumentException.class, () -> PluginConfig.load(Map.of(), cfg).parallel());
        assertEquals(cfg + ":1='maybe': expected 0 or 1", e.getMessage());
        Files.writeString(cfg, "\ncuda.paralel=1\n");
        e = assertThrows(IllegalArgumentException.class, () -> PluginConfig.load(Map.of(), cfg));
        assertEquals(cfg + ":2: unknown key cuda.paralel", e.getMessage());
    }
}

package dev.criugpu.cuda.gpu;

import dev.criugpu.cuda.sys.NvmlMemory;
import dev.criugpu.cuda.sys.MemorySource;
import dev.criugpu.cuda.bindings.nvml_h;
import dev.criugpu.cuda.sys.MemorySource.FreeMemory;
import dev.criugpu.cuda.sys.MemorySource.ProcessMemory;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class GpuMemoryTest {
    static final String A = "GPU-eea0d83f-ebcd-ac27-6b3e-bec2a19724e6";
    static final String B = "GPU-0123abcd-0000-1111-2222-333344445555";
    static final long MIB = 1L << 20;

    @Test
    void usedMemoryIsSummedPerPidAndGpuInBytesThenRoundedUpToMib() {
        List<ProcessMemory> rows = List.of(
                new ProcessMemory(A, 1234, 16896 * MIB),
                new ProcessMemory(B, 1234, 512 * MIB),
                new ProcessMemory(B.toUpperCase(), 1234, 100 * MIB - 1),
                new ProcessMemory(A, 5, 1),
                new ProcessMemory(B, 5, 0));
        assertEquals(Map.of(1234, Map.of(GpuUuid.parse(A), 16896L, GpuUuid.parse(B), 612L),
                5, Map.of(GpuUuid.parse(A), 1L, GpuUuid.parse(B), 0L)), GpuMemory.usedMib(rows));
    }

    @Test
    void rowsWithoutFigureOrOfNoGpuUuidAreLeftOut() {
        List<ProcessMemory> rows = List.of(
                new ProcessMemory(A, 77, nvml_h.NVML_VALUE_NOT_AVAILABLE),
                new ProcessMemory("MIG-9f3e0e1a-3c5d-5a8e-9d2b-5f4d1e2c3b4a", 78, MIB),
                new ProcessMemory(A, 79, 3 * MIB));
        assertEquals(Map.of(79, Map.of(GpuUuid.parse(A), 3L)), GpuMemory.usedMib(rows));
    }

    @Test
    void freeMemoryIsRoundedDownToMib() {
        List<FreeMemory> rows = List.of(new FreeMemory(A, 142000 * MIB + MIB - 1), new FreeMemory(B, 3 * MIB),
                new FreeMemory("No devices were found", 0));
        assertEquals(Map.of(GpuUuid.parse(A), 142000L, GpuUuid.parse(B), 3L), GpuMemory.freeMib(rows));
    }

    @Test
    void withoutLibnvidiaMlTheFiguresComeFromNvidiaSmi() {
        assumeTrue(nvml_h.loadError().isPresent(), "libnvidia-ml.so.1 is installed here: the fallback is not chosen");
        assertTrue(NvmlMemory.unusable().orElseThrow().contains("libnvidia-ml.so.1"), NvmlMemory.unusable().orElseThrow());
        assertSame(NvidiaSmiMemory.INSTANCE, GpuMemory.source());
    }

    @Test
    void withNeitherNvmlNorNvidiaSmiBothQueriesAnswerEmpty() {
        assumeTrue(nvml_h.loadError().isPresent(), "libnvidia-ml.so.1 is installed here");
        assumeTrue(onPath("nvidia-smi").isEmpty(), "nvidia-smi is installed here");
        assertEquals(Optional.empty(), GpuMemory.freeMib());
        assertEquals(Optional.empty(), GpuMemory.usedByPid());
    }

    private static Optional<Path> onPath(String program) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, program);
            if (Files.isExecutable(p)) return Optional.of(p);
        }
        return Optional.empty();
    }
}

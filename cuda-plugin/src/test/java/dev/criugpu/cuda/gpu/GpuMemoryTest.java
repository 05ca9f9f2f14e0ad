package dev.criugpu.cuda.gpu;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

class GpuMemoryTest {
    static final String A = "GPU-eea0d83f-ebcd-ac27-6b3e-bec2a19724e6";
    static final String B = "GPU-0123abcd-0000-1111-2222-333344445555";

    @Test
    void usedMemoryIsSummedPerPidAndGpuAndOddLinesAreSkipped() {
        String text = "1234, " + A + ", 16896\n1234, " + B + ", 512\n1234, " + B + ", 100\n77, " + A + ", [N/A]\n\n";
        assertEquals(Map.of(1234, Map.of(GpuUuid.parse(A), 16896L, GpuUuid.parse(B), 612L)), GpuMemory.parseUsed(text));
    }

    @Test
    void freeMemoryPerGpu() {
        assertEquals(Map.of(GpuUuid.parse(A), 142000L, GpuUuid.parse(B), 3L),
                GpuMemory.parseFree(A + ", 142000\n" + B.toUpperCase().replace("GPU-", "GPU-") + ", 3\nNo devices were found\n"));
    }
}

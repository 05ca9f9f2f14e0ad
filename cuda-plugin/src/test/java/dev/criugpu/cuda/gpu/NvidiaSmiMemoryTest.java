package dev.criugpu.cuda.gpu;

import dev.criugpu.cuda.sys.MemorySource;
import dev.criugpu.cuda.sys.MemorySource.FreeMemory;
import dev.criugpu.cuda.sys.MemorySource.ProcessMemory;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

class NvidiaSmiMemoryTest {
    static final String A = GpuMemoryTest.A;
    static final String B = GpuMemoryTest.B;
    static final long MIB = GpuMemoryTest.MIB;

    @Test
    void processLinesBecomeRowsInBytesAndNotAvailableIsNegative() {
        String text = "1234, " + A + ", 16896\n1234, " + B + ", 512\n77, " + A + ", [N/A]\n\nNo running processes found\n";
        assertEquals(List.of(new ProcessMemory(A, 1234, 16896 * MIB), new ProcessMemory(B, 1234, 512 * MIB),
                new ProcessMemory(A, 77, -1)), NvidiaSmiMemory.parseProcesses(text));
    }

    @Test
    void usedMemoryOfNvidiaSmiMapsAsBeforeNvml() {
        String text = "1234, " + A + ", 16896\n1234, " + B + ", 512\n1234, " + B + ", 100\n77, " + A + ", [N/A]\n\n";
        assertEquals(Map.of(1234, Map.of(GpuUuid.parse(A), 16896L, GpuUuid.parse(B), 612L)),
                GpuMemory.usedMib(NvidiaSmiMemory.parseProcesses(text)));
    }

    @Test
    void freeLinesBecomeRowsAndOddLinesAreSkipped() {
        assertEquals(List.of(new FreeMemory(A, 142000 * MIB), new FreeMemory(B.toUpperCase(), 3 * MIB)),
                NvidiaSmiMemory.parseFree(A + ", 142000\n" + B.toUpperCase() + ", 3\n" + A + ", [N/A]\nNo devices were found\n"));
    }
}

package dev.criugpu.cuda.gpu;

import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.criugpu.cuda.gpu.GpuMappingTest.g;
import static org.junit.jupiter.api.Assertions.assertEquals;

class TaskGpuRecordTest {
    static final String H = GpuMappingTest.H100;

    @Test
    void onlyGpusHoldingMemoryAreCheckpointedOnceAFigureIsKnown() {
        Map<GpuInfo, Long> mapped = new LinkedHashMap<>();
        mapped.put(g(1, 0, H), 4616L);
        mapped.put(g(2, 1, H), 0L);
        TaskGpuRecord r = TaskGpuRecord.of(mapped, List.of(g(3, 2, H)));
        assertEquals(List.of(g(1, 0, H)), r.checkpointed());
        assertEquals(List.of(g(1, 0, H), g(2, 1, H), g(3, 2, H)), r.visible());
    }

    @Test
    void withoutAnyFigureEveryMappedGpuIsCheckpointed() {
        Map<GpuInfo, Long> mapped = new LinkedHashMap<>();
        mapped.put(g(1, 0, H), 0L);
        mapped.put(g(2, 1, H), 0L);
        TaskGpuRecord r = TaskGpuRecord.of(mapped, List.of(g(2, 1, H), g(1, 0, H)));
        assertEquals(List.of(g(1, 0, H), g(2, 1, H)), r.checkpointed());
        assertEquals(List.of(g(1, 0, H), g(2, 1, H)), r.visible());
    }
}

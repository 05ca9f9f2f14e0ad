package dev.criugpu.cuda.job;

import dev.criugpu.cuda.gpu.GpuUuid;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MultiGpuMemoryTest {
    static final GpuUuid A = GpuUuid.parse("GPU-11111111-2222-3333-4444-555555555555");
    static final GpuUuid B = GpuUuid.parse("GPU-66666666-7777-8888-9999-000000000000");

    @Test
    void aProcessOnOneGpuIsNeverAskedAbout() {
        AtomicInteger asked = new AtomicInteger();
        List<String> lines = MultiGpuMemory.blockers(List.of(new MultiGpuMemory.Task(7, List.of(A))), () -> {
            asked.incrementAndGet();
            return Optional.empty();
        });
        assertEquals(List.of(), lines);
        assertEquals(0, asked.get(), "memory asked for a job without a multi-GPU process");
    }

    @Test
    void aProcessOnTwoGpusAboveTheMeasuredSizeIsRefusedWithItsGpusAndMemory() {
        List<MultiGpuMemory.Task> tasks = List.of(new MultiGpuMemory.Task(7, List.of(A, B)),
                new MultiGpuMemory.Task(8, List.of(A, B)), new MultiGpuMemory.Task(9, List.of(B)));
        // the measured edge: 966 MiB per GPU restored, 1030 MiB did not
        Map<Integer, Map<GpuUuid, Long>> used = Map.of(7, Map.of(A, 966L, B, 966L), 8, Map.of(A, 900L, B, 1030L),
                9, Map.of(B, 80_000L));
        List<String> lines = MultiGpuMemory.blockers(tasks, () -> Optional.of(used));
        assertEquals(1, lines.size(), lines.toString());
        assertTrue(lines.getFirst().startsWith("pid 8 uses GPUs " + A.text() + ", " + B.text() + " and holds 1030 MiB on "
                + B.text() + ": with peer access between its GPUs"), lines.getFirst());
        assertTrue(lines.getFirst().endsWith("so the dump would lose it"), lines.getFirst());
    }

    @Test
    void unknownMemoryCountsAsTooMuch() {
        List<MultiGpuMemory.Task> tasks = List.of(new MultiGpuMemory.Task(7, List.of(A, B)), new MultiGpuMemory.Task(8, List.of(A, B)));
        List<String> none = MultiGpuMemory.blockers(tasks, Optional::empty);
        assertEquals(2, none.size());
        assertTrue(none.getFirst().contains("pid 7 uses GPUs") && none.getFirst().contains("cannot be read"), none.getFirst());
        List<String> unlisted = MultiGpuMemory.blockers(tasks, () -> Optional.of(Map.of(7, Map.of(A, 10L, B, 10L))));
        assertEquals(1, unlisted.size());
        assertTrue(unlisted.getFirst().startsWith("pid 8 uses GPUs") && unlisted.getFirst().contains("nvidia-smi does not list"),
                unlisted.getFirst());
    }
}

package dev.criugpu.cuda.gpu;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GpuMappingTest {
    static final String H100 = "NVIDIA H100 80GB HBM3";
    static final String L4 = "NVIDIA L4";

    static GpuUuid u(int n) {
        return GpuUuid.parse(String.format("GPU-%08x-0000-0000-0000-000000000000", n));
    }

    static GpuInfo g(int n, int minor, String model) {
        return new GpuInfo(u(n), minor, model, "0000:0" + minor + ":00.0");
    }

    @Test
    void allPresentMeansPlainRestore() {
        GpuMapping m = GpuMapping.plan(List.of(g(1, 0, H100)), List.of(g(1, 0, H100), g(2, 1, H100)), Map.of());
        assertFalse(m.remaps());
        assertEquals(List.of(), m.pairsFor(List.of(u(1))));
    }

    @Test
    void absentGpuGoesToSameMinorOfSameModel() {
        GpuMapping m = GpuMapping.plan(List.of(g(1, 1, H100)), List.of(g(7, 0, H100), g(8, 1, H100)), Map.of());
        assertTrue(m.remaps());
        assertEquals(List.of(new GpuPair(u(1), u(8))), m.pairsFor(List.of(u(1))));
    }

    @Test
    void absentGpuFallsBackToLowestFreeMinorAndSkipsOtherModels() {
        GpuMapping m = GpuMapping.plan(List.of(g(1, 5, H100)), List.of(g(7, 0, L4), g(8, 2, H100), g(9, 3, H100)), Map.of());
        assertEquals(u(8), m.asMap().get(u(1)));
    }

    @Test
    void taskWithTwoGpusListsBothWhenOneMoves() {
        GpuMapping m = GpuMapping.plan(List.of(g(1, 0, H100), g(2, 1, H100)),
                List.of(g(1, 0, H100), g(9, 1, H100)), Map.of());
        assertEquals(List.of(new GpuPair(u(1), u(1)), new GpuPair(u(2), u(9))), m.pairsFor(List.of(u(1), u(2))));
    }

    @Test
    void explicitMapWinsAndDisplacesAPresentGpu() {
        // swap 1 and 2: 1 -> 2 explicitly, so 2 cannot stay and takes the free one of its model
        GpuMapping m = GpuMapping.plan(List.of(g(1, 0, H100), g(2, 1, H100)),
                List.of(g(1, 0, H100), g(2, 1, H100)), Map.of(u(1), u(2)));
        assertEquals(Map.of(u(1), u(2), u(2), u(1)), m.asMap());
    }

    @Test
    void noFreeGpuOfTheModelIsAClearError() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> GpuMapping.plan(List.of(g(1, 0, H100)), List.of(g(7, 0, L4)), Map.of()));
        assertTrue(e.getMessage().contains(u(1).text()) && e.getMessage().contains("no free GPU of that model"), e.getMessage());
    }

    @Test
    void explicitMapOntoOtherModelOrAbsentGpuIsRefused() {
        var model = assertThrows(IllegalArgumentException.class,
                () -> GpuMapping.plan(List.of(g(1, 0, H100)), List.of(g(7, 0, L4)), Map.of(u(1), u(7))));
        assertTrue(model.getMessage().contains("same model"), model.getMessage());
        var absent = assertThrows(IllegalArgumentException.class,
                () -> GpuMapping.plan(List.of(g(1, 0, H100)), List.of(g(7, 0, H100)), Map.of(u(1), u(5))));
        assertTrue(absent.getMessage().contains("not a usable GPU"), absent.getMessage());
    }

    @Test
    void twoAbsentGpusGetDistinctTargets() {
        GpuMapping m = GpuMapping.plan(List.of(g(1, 0, H100), g(2, 1, H100)),
                List.of(g(8, 0, H100), g(9, 1, H100)), Map.of());
        assertEquals(Map.of(u(1), u(8), u(2), u(9)), m.asMap());
    }

    static TaskGpuRecord task(List<GpuInfo> checkpointed, List<GpuInfo> visible) {
        return new TaskGpuRecord(checkpointed, visible);
    }

    @Test
    void movingTaskListsEveryVisibleGpuAsAOneToOneMap() {
        // a task on GPU 1 sent to GPU 2 of a two-GPU host: GPU 2, visible to it too, must go somewhere: GPU 1
        GpuMapping m = GpuMapping.plan(List.of(g(1, 0, H100)), List.of(g(1, 0, H100), g(2, 1, H100)), Map.of(u(1), u(2)));
        assertEquals(List.of(new GpuPair(u(1), u(2)), new GpuPair(u(2), u(1))),
                m.pairsFor(task(List.of(g(1, 0, H100)), List.of(g(1, 0, H100), g(2, 1, H100))), List.of(g(1, 0, H100), g(2, 1, H100))));
    }

    @Test
    void visibleGpuStaysWhenItsPlaceIsFreeAndNothingIsAddedWithoutAMove() {
        GpuMapping m = GpuMapping.plan(List.of(g(1, 0, H100)), List.of(g(2, 1, H100), g(3, 2, H100)), Map.of());
        assertEquals(List.of(new GpuPair(u(1), u(2)), new GpuPair(u(3), u(3))),
                m.pairsFor(task(List.of(g(1, 0, H100)), List.of(g(1, 0, H100), g(3, 2, H100))), List.of(g(2, 1, H100), g(3, 2, H100))));
        GpuMapping still = GpuMapping.plan(List.of(g(1, 0, H100)), List.of(g(1, 0, H100), g(2, 1, H100)), Map.of());
        assertEquals(List.of(), still.pairsFor(task(List.of(g(1, 0, H100)), List.of(g(1, 0, H100), g(2, 1, H100))),
                List.of(g(1, 0, H100), g(2, 1, H100))));
    }

    // The 2-GPU host's case: a task holding state on GPU 0 only (it also saw GPU 1), GPU 0 treated as absent.
    @Test
    void twoGpusOneTreatedAbsentMovesTheTaskToTheOtherAndCompletesAPermutation() {
        GpuInfo g0 = g(1, 0, H100), g1 = g(2, 1, H100);
        TaskGpuRecord t = TaskGpuRecord.of(mapped(g0, 4616L, g1, 0L), List.of(g0, g1));
        GpuMapping m = GpuMapping.plan(t.checkpointed(), List.of(g1), Map.of());
        assertEquals(Map.of(u(1), u(2)), m.asMap());
        assertEquals(List.of(new GpuPair(u(1), u(2)), new GpuPair(u(2), u(1))), m.pairsFor(t, List.of(g0, g1)));
    }

    @Test
    void recordingEveryMappedGpuAsCheckpointedCannotBePlacedOnOneGpu() {
        // why only GPUs holding memory count: both would need a place and only one GPU is usable
        GpuInfo g0 = g(1, 0, H100), g1 = g(2, 1, H100);
        var e = assertThrows(IllegalArgumentException.class, () -> GpuMapping.plan(List.of(g0, g1), List.of(g1), Map.of()));
        assertTrue(e.getMessage().contains(u(1).text()), e.getMessage());
    }

    @Test
    void explicitMapOfATaskOnOneGpuSwapsTheSeenGpuBack() {
        GpuInfo g0 = g(1, 0, H100), g1 = g(2, 1, H100);
        TaskGpuRecord t = TaskGpuRecord.of(mapped(g0, 4616L, g1, 0L), List.of(g0, g1));
        GpuMapping m = GpuMapping.plan(t.checkpointed(), List.of(g0, g1), Map.of(u(1), u(2)));
        assertEquals(Map.of(u(1), u(2)), m.asMap());
        assertEquals(List.of(new GpuPair(u(1), u(2)), new GpuPair(u(2), u(1))), m.pairsFor(t, List.of(g0, g1)));
    }

    @Test
    void swapOfATaskOnBothGpus() {
        GpuInfo g0 = g(1, 0, H100), g1 = g(2, 1, H100);
        TaskGpuRecord t = TaskGpuRecord.of(mapped(g0, 4616L, g1, 4616L), List.of(g0, g1));
        GpuMapping m = GpuMapping.plan(t.checkpointed(), List.of(g0, g1), Map.of(u(1), u(2), u(2), u(1)));
        assertEquals(List.of(new GpuPair(u(1), u(2)), new GpuPair(u(2), u(1))), m.pairsFor(t, List.of(g0, g1)));
    }

    @Test
    void chainedExplicitMapDisplacesAlongTheChainAndClosesTheCycle() {
        // 0 -> 1 and 1 -> 2 explicitly; GPU 2, still present, cannot stay (1 goes there) and takes the free GPU 0
        GpuInfo g0 = g(1, 0, H100), g1 = g(2, 1, H100), g2 = g(3, 2, H100);
        TaskGpuRecord t = TaskGpuRecord.of(mapped(g0, 100L, g1, 100L, g2, 100L), List.of(g0, g1, g2));
        GpuMapping m = GpuMapping.plan(t.checkpointed(), List.of(g0, g1, g2), Map.of(u(1), u(2), u(2), u(3)));
        assertEquals(Map.of(u(1), u(2), u(2), u(3), u(3), u(1)), m.asMap());
    }

    @Test
    void tasksOnDifferentGpusArePlacedTogetherBeforeAnySeenGpuIsConsidered() {
        // task A on GPU 0 (treated absent), task B on GPU 1: B stays, A has no free GPU left: refused, not misplaced
        GpuInfo g0 = g(1, 0, H100), g1 = g(2, 1, H100);
        TaskGpuRecord a = TaskGpuRecord.of(mapped(g0, 10L, g1, 0L), List.of(g0, g1));
        TaskGpuRecord b = TaskGpuRecord.of(mapped(g0, 0L, g1, 10L), List.of(g0, g1));
        List<GpuInfo> recorded = new java.util.ArrayList<>(a.checkpointed());
        recorded.addAll(b.checkpointed());
        var e = assertThrows(IllegalArgumentException.class, () -> GpuMapping.plan(recorded, List.of(g1), Map.of()));
        assertTrue(e.getMessage().contains(u(1).text()) && e.getMessage().contains("no free GPU"), e.getMessage());
        // with a third GPU, A takes it and B stays; A's seen GPU 1 is B's and stays put, GPU 0 is listed onto a free one
        GpuInfo g2 = g(3, 2, H100);
        GpuMapping m = GpuMapping.plan(recorded, List.of(g1, g2), Map.of());
        assertEquals(Map.of(u(1), u(3), u(2), u(2)), m.asMap());
        assertEquals(List.of(new GpuPair(u(1), u(3)), new GpuPair(u(2), u(2))), m.pairsFor(a, List.of(g0, g1, g2)));
        assertEquals(List.of(), m.pairsFor(b, List.of(g0, g1, g2)));
    }

    @Test
    void seenGpuPrefersAFreeGpuOfItsOwnModel() {
        GpuInfo g0 = g(1, 0, H100), l4 = g(2, 1, L4), g2 = g(3, 2, H100), l4b = g(4, 3, L4);
        TaskGpuRecord t = new TaskGpuRecord(List.of(g0), List.of(g0, l4));
        GpuMapping m = GpuMapping.plan(t.checkpointed(), List.of(g2, l4b), Map.of());
        // the L4 seen is still here and free: it stays; were it the target, it would take the other L4
        assertEquals(List.of(new GpuPair(u(1), u(3)), new GpuPair(u(2), u(2))), m.pairsFor(t, List.of(g0, l4, g2, l4b)));
        GpuMapping onto = GpuMapping.plan(List.of(g(2, 1, L4)), List.of(l4, l4b), Map.of(u(2), u(4)));
        TaskGpuRecord t2 = new TaskGpuRecord(List.of(l4), List.of(g0, l4, l4b));
        assertEquals(List.of(new GpuPair(u(2), u(4)), new GpuPair(u(1), u(1)), new GpuPair(u(4), u(2))),
                onto.pairsFor(t2, List.of(g0, l4, g2, l4b)));
    }

    static Map<GpuInfo, Long> mapped(Object... kv) {
        Map<GpuInfo, Long> m = new java.util.LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((GpuInfo) kv[i], (Long) kv[i + 1]);
        return m;
    }
}

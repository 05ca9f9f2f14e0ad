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

    @Test
    void movingTaskListsEveryVisibleGpuAsAOneToOneMap() {
        // a task on GPU 1 sent to GPU 2 of a two-GPU host: GPU 2, visible to it too, must go somewhere: GPU 1
        GpuMapping m = GpuMapping.plan(List.of(g(1, 0, H100)), List.of(g(1, 0, H100), g(2, 1, H100)), Map.of(u(1), u(2)));
        assertEquals(List.of(new GpuPair(u(1), u(2)), new GpuPair(u(2), u(1))),
                m.pairsFor(List.of(u(1)), List.of(u(1), u(2)), List.of(u(1), u(2))));
    }

    @Test
    void visibleGpuStaysWhenItsPlaceIsFreeAndNothingIsAddedWithoutAMove() {
        GpuMapping m = GpuMapping.plan(List.of(g(1, 0, H100)), List.of(g(2, 1, H100), g(3, 2, H100)), Map.of());
        assertEquals(List.of(new GpuPair(u(1), u(2)), new GpuPair(u(3), u(3))),
                m.pairsFor(List.of(u(1)), List.of(u(1), u(3)), List.of(u(2), u(3))));
        GpuMapping still = GpuMapping.plan(List.of(g(1, 0, H100)), List.of(g(1, 0, H100), g(2, 1, H100)), Map.of());
        assertEquals(List.of(), still.pairsFor(List.of(u(1)), List.of(u(1), u(2)), List.of(u(1), u(2))));
    }
}

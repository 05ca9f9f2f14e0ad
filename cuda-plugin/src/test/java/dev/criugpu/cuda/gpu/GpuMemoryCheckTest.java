package dev.criugpu.cuda.gpu;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class GpuMemoryCheckTest {
    static final GpuUuid A = GpuUuid.parse(GpuMemoryTest.A);
    static final GpuUuid B = GpuUuid.parse(GpuMemoryTest.B);

    @Test
    void agreeingSourcesListingThePidAreTheSame() {
        assertNull(GpuMemoryCheck.differences(Optional.of(Map.of(42, Map.of(A, 257L))), Optional.of(Map.of(42, Map.of(A, 256L))),
                Optional.of(Map.of(A, 1000L)), Optional.of(Map.of(A, 1000L + GpuMemoryCheck.FREE_SLACK_MIB)), new String[] {"42"}));
    }

    @Test
    void eachKindOfDisagreementIsNamed() {
        var used = Optional.of(Map.of(42, Map.of(A, 256L)));
        var free = Optional.of(Map.of(A, 1000L));
        assertEquals("NVML gave no answer", GpuMemoryCheck.differences(Optional.empty(), used, free, free, new String[0]));
        assertEquals("NVML lists no device memory of pid 43", GpuMemoryCheck.differences(used, used, free, free, new String[] {"43"}));
        assertEquals("pid 42 is on other GPUs",
                GpuMemoryCheck.differences(used, Optional.of(Map.of(42, Map.of(B, 256L))), free, free, new String[0]));
        assertEquals("pid 42 on " + A + " holds another amount",
                GpuMemoryCheck.differences(used, Optional.of(Map.of(42, Map.of(A, 254L))), free, free, new String[0]));
        assertEquals(A + " has another amount free",
                GpuMemoryCheck.differences(used, used, free, Optional.of(Map.of(A, 2000L)), new String[0]));
    }
}

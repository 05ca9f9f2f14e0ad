package dev.criugpu.cuda.gpu;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DeviceMapTest {
    static final String A = "GPU-eea0d83f-ebcd-ac27-6b3e-bec2a19724e6";
    static final String B = "GPU-8f4022ba-e0cb-1298-286e-225c953a7feb";

    @Test
    void parsesPairsInOrder() {
        var m = DeviceMap.parse(A + "=" + B + ", " + B + "=" + A, "test");
        assertEquals(Map.of(GpuUuid.parse(A), GpuUuid.parse(B), GpuUuid.parse(B), GpuUuid.parse(A)), m);
        assertEquals(GpuUuid.parse(A), m.keySet().iterator().next());
    }

    @Test
    void emptyIsEmpty() {
        assertTrue(DeviceMap.parse("", "x").isEmpty());
        assertTrue(DeviceMap.parse(null, "x").isEmpty());
    }

    @Test
    void badEntriesNameTheSourceAndTheEntry() {
        var e = assertThrows(IllegalArgumentException.class, () -> DeviceMap.parse(A, "CRIU_CUDA_DEVICE_MAP"));
        assertEquals("CRIU_CUDA_DEVICE_MAP: '" + A + "' is not of the form oldUuid=newUuid", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> DeviceMap.parse(A + "=GPU-123", "m"));
        assertTrue(e.getMessage().startsWith("m: 'GPU-123' is not a GPU UUID"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> DeviceMap.parse(A + "=" + B + "," + A + "=" + A, "m"));
        assertTrue(e.getMessage().contains("mapped twice"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> DeviceMap.parse(A + "=" + B + "," + B + "=" + B, "m"));
        assertTrue(e.getMessage().contains("two GPUs are mapped onto"), e.getMessage());
    }

    @Test
    void uuidBytesRoundTrip() {
        GpuUuid u = GpuUuid.parse(A.toUpperCase().replace("GPU-", "gpu-"));
        assertEquals(A, u.text());
        byte[] b = u.bytes();
        assertEquals(16, b.length);
        assertEquals((byte) 0xee, b[0]);
        assertEquals(u, GpuUuid.ofBytes(b));
        assertArrayEquals(b, GpuUuid.ofBytes(b).bytes());
    }

    @Test
    void listParses() {
        assertEquals(Set.of(GpuUuid.parse(A), GpuUuid.parse(B)), DeviceMap.parseList(A + "," + B, "t"));
        assertThrows(IllegalArgumentException.class, () -> DeviceMap.parseList("GPU-x", "t"));
    }
}

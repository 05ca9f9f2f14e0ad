package dev.criugpu.amdgpu.sys;

import org.junit.jupiter.api.Test;

import static dev.criugpu.amdgpu.sys.SdmaLinearCopy.CountEncoding.BYTES;
import static dev.criugpu.amdgpu.sys.SdmaLinearCopy.CountEncoding.BYTES_MINUS_ONE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

class SdmaLinearCopyTest {
    private static final int VEGA10 = 141;
    private static final int POLARIS = 130;
    private static final long MiB = 1 << 20;

    @Test
    void packetLimitDependsOnTheFamily() {
        assertEquals(2 * MiB, SdmaLinearCopy.maxBytesPerPacket(VEGA10));
        assertEquals(2 * MiB - 1, SdmaLinearCopy.maxBytesPerPacket(POLARIS));
    }

    @Test
    void fiveMebibytesOnVega10AreThreePacketsPaddedToEightDwords() {
        long src = 0x1_0000_0000L;
        long dst = 0x2_8000_0000L;
        int[] ib = SdmaLinearCopy.packets(src, dst, 5 * MiB, VEGA10, BYTES);
        assertEquals(24, ib.length, "21 packet dwords padded to a multiple of 8");
        assertArrayEquals(new int[]{1, (int) (2 * MiB), 0, 0, 1, 0x80000000, 2}, java.util.Arrays.copyOfRange(ib, 0, 7));
        assertArrayEquals(new int[]{1, (int) (2 * MiB), 0, 0x200000, 1, 0x80200000, 2}, java.util.Arrays.copyOfRange(ib, 7, 14));
        assertArrayEquals(new int[]{1, (int) MiB, 0, 0x400000, 1, 0x80400000, 2}, java.util.Arrays.copyOfRange(ib, 14, 21));
        assertArrayEquals(new int[]{0, 0, 0}, java.util.Arrays.copyOfRange(ib, 21, 24));
    }

    @Test
    void olderFamiliesMoveOneByteLessPerPacket() {
        int[] ib = SdmaLinearCopy.packets(0, 0x10000000L, 4 * MiB, POLARIS, BYTES);
        assertEquals((int) (2 * MiB - 1), ib[1]);
        assertEquals((int) (2 * MiB - 1), ib[8]);
        assertEquals(2, ib[15], "the two bytes the first packets left");
        assertEquals((int) (4 * MiB - 2), ib[14 + 3], "third packet starts after 2 × (2 MiB − 1)");
    }

    @Test
    void countCanBeEncodedAsTheKernelDoes() {
        int[] ib = SdmaLinearCopy.packets(0, 4096, 4096, VEGA10, BYTES_MINUS_ONE);
        assertEquals(4095, ib[1]);
        assertEquals(8, ib.length);
    }

    @Test
    void emptyCopyHasNoPacketsAndIbSizeFollowsTheBufferFull() {
        assertEquals(0, SdmaLinearCopy.packets(0, 0, 0, VEGA10, BYTES).length);
        assertEquals(3 * 28, SdmaLinearCopy.ibBytes(64 * MiB, 5 * MiB, VEGA10));
        assertEquals(28, SdmaLinearCopy.ibBytes(4096, 5 * MiB, VEGA10));
    }
}

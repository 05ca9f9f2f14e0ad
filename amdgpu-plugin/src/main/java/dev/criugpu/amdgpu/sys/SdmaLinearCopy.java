package dev.criugpu.amdgpu.sys;

import dev.criugpu.amdgpu.bindings.amdgpu_h;

import java.util.Arrays;

/**
 * SDMA "copy linear" packets for the indirect buffer that moves BO contents between VRAM/GTT and a host
 * bounce buffer: 7 dwords each, {@code [op COPY (1) | sub-op LINEAR (0), count, 0, src lo, src hi, dst lo,
 * dst hi]}, then NOP (0) dwords up to a multiple of 8.
 *
 * <p>The count dword is open: upstream CRIU writes the byte count for every GPU family, while the kernel's own
 * SDMA v4+ code writes byte count − 1. {@link CountEncoding} keeps both until hardware settles it.
 */
public final class SdmaLinearCopy {
    public static final int PACKET_DWORDS = 7;
    public static final int PACKET_BYTES = PACKET_DWORDS * 4;
    private static final int OP_COPY_LINEAR = 0x00000001;

    public enum CountEncoding {
        /** count = bytes (upstream criu-amdgpu-plugin). */
        BYTES,
        /** count = bytes − 1 (the kernel's sdma_v4+ copy_buffer). */
        BYTES_MINUS_ONE
    }

    private SdmaLinearCopy() {
    }

    /** Bytes one packet may move: 2 MiB from Vega10 (family AI) on, one byte less before. */
    public static long maxBytesPerPacket(int familyId) {
        return familyId >= amdgpu_h.AMDGPU_FAMILY_AI() ? 1L << 21 : (1L << 21) - 1;
    }

    /** Size of the IB for one buffer-full: ceil(min(BO, buffer) / max packet) packets of 28 bytes. */
    public static long ibBytes(long boSize, long bufferSize, int familyId) {
        long chunk = Math.min(boSize, bufferSize);
        long max = maxBytesPerPacket(familyId);
        return ((chunk + max - 1) / max) * PACKET_BYTES;
    }

    /** The packets that copy {@code length} bytes from GPU VA {@code src} to GPU VA {@code dst}, NOP-padded. */
    public static int[] packets(long src, long dst, long length, int familyId, CountEncoding encoding) {
        if (length < 0) throw new IllegalArgumentException("negative length " + length);
        long max = maxBytesPerPacket(familyId);
        int count = (int) ((length + max - 1) / max);
        int dwords = count * PACKET_DWORDS;
        int[] ib = new int[(dwords + 7) & ~7];
        long done = 0;
        for (int p = 0; p < count; p++) {
            long n = Math.min(max, length - done);
            int at = p * PACKET_DWORDS;
            ib[at] = OP_COPY_LINEAR;
            ib[at + 1] = (int) (encoding == CountEncoding.BYTES ? n : n - 1);
            ib[at + 2] = 0;
            ib[at + 3] = (int) (src + done);
            ib[at + 4] = (int) ((src + done) >>> 32);
            ib[at + 5] = (int) (dst + done);
            ib[at + 6] = (int) ((dst + done) >>> 32);
            done += n;
        }
        Arrays.fill(ib, dwords, ib.length, 0);
        return ib;
    }
}

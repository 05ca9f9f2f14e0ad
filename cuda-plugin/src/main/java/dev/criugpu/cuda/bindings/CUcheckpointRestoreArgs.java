package dev.criugpu.cuda.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code CUcheckpointRestoreArgs} as of CUDA 13.0: {@code gpuPairs}, {@code gpuPairsCount}, then reserved bytes
 * to 64. Older drivers (API &lt; 13000) define the whole struct as reserved: set the fields only on 13000+.
 */
public final class CUcheckpointRestoreArgs {
    private static final GroupLayout LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("gpuPairs"),
            JAVA_INT.withName("gpuPairsCount"),
            MemoryLayout.sequenceLayout(52 - ADDRESS.byteSize(), JAVA_BYTE).withName("reserved"),
            JAVA_LONG.withName("reserved1")
    ).withName("CUcheckpointRestoreArgs_st");

    /** First driver API version whose restore args carry GPU pairs. */
    public static final int GPU_PAIRS_SINCE_API = 13000;

    private CUcheckpointRestoreArgs() {
    }

    public static GroupLayout layout() {
        return LAYOUT;
    }

    public static long sizeof() {
        return LAYOUT.byteSize();
    }

    public static long offsetOf(String field) {
        return LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    public static MemorySegment allocate(SegmentAllocator allocator) {
        return allocator.allocate(LAYOUT).fill((byte) 0);
    }

    public static MemorySegment gpuPairs(MemorySegment struct) {
        return struct.get(ADDRESS, offsetOf("gpuPairs"));
    }

    public static void gpuPairs(MemorySegment struct, MemorySegment value) {
        struct.set(ADDRESS, offsetOf("gpuPairs"), value);
    }

    public static int gpuPairsCount(MemorySegment struct) {
        return struct.get(JAVA_INT, offsetOf("gpuPairsCount"));
    }

    public static void gpuPairsCount(MemorySegment struct, int value) {
        struct.set(JAVA_INT, offsetOf("gpuPairsCount"), value);
    }
}

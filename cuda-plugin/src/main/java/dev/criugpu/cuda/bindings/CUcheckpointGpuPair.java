package dev.criugpu.cuda.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

/** {@code CUcheckpointGpuPair} (cuda.h, CUDA 13.0): the GPU a process was checkpointed on and its new GPU. */
public final class CUcheckpointGpuPair {
    private static final GroupLayout LAYOUT = MemoryLayout.structLayout(
            CUuuid.layout().withName("oldUuid"),
            CUuuid.layout().withName("newUuid")
    ).withName("CUcheckpointGpuPair_st");

    private CUcheckpointGpuPair() {
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

    /** A zeroed array of {@code count} pairs. */
    public static MemorySegment allocateArray(long count, SegmentAllocator allocator) {
        return allocator.allocate(LAYOUT, count).fill((byte) 0);
    }

    public static MemorySegment asSlice(MemorySegment array, long index) {
        return array.asSlice(index * sizeof(), sizeof());
    }

    public static MemorySegment oldUuid(MemorySegment struct) {
        return struct.asSlice(offsetOf("oldUuid"), CUuuid.sizeof());
    }

    public static MemorySegment newUuid(MemorySegment struct) {
        return struct.asSlice(offsetOf("newUuid"), CUuuid.sizeof());
    }
}

package dev.criugpu.cuda.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code nvmlProcessInfo_t} (nvml.h: nvmlProcessInfo_v2_t, what the _v3 process queries fill), 24 bytes.
 * {@code usedGpuMemory} is {@link nvml_h#NVML_VALUE_NOT_AVAILABLE} when the driver cannot say; the instance ids are
 * 0xFFFFFFFF outside MIG.
 */
public final class nvmlProcessInfo_t {
    private static final GroupLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("pid"),
            MemoryLayout.paddingLayout(4),
            JAVA_LONG.withName("usedGpuMemory"),
            JAVA_INT.withName("gpuInstanceId"),
            JAVA_INT.withName("computeInstanceId")
    ).withName("nvmlProcessInfo_v2_st");

    private nvmlProcessInfo_t() {
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

    /** A zeroed array of {@code count} structs. */
    public static MemorySegment allocateArray(long count, SegmentAllocator allocator) {
        return allocator.allocate(LAYOUT, count).fill((byte) 0);
    }

    /** Element {@code index} of an array. */
    public static MemorySegment asSlice(MemorySegment array, long index) {
        return array.asSlice(index * sizeof(), sizeof());
    }

    public static int pid(MemorySegment struct) {
        return struct.get(JAVA_INT, offsetOf("pid"));
    }

    public static long usedGpuMemory(MemorySegment struct) {
        return struct.get(JAVA_LONG, offsetOf("usedGpuMemory"));
    }

    public static int gpuInstanceId(MemorySegment struct) {
        return struct.get(JAVA_INT, offsetOf("gpuInstanceId"));
    }

    public static int computeInstanceId(MemorySegment struct) {
        return struct.get(JAVA_INT, offsetOf("computeInstanceId"));
    }
}

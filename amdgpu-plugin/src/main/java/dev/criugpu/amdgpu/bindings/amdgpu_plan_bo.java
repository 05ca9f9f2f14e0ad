package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct amdgpu_plan_bo} from {@code amdgpu-plugin/src/main/c/amdgpu_restore.h}, in the shape jextract generates. One BO of a KFD file in the restore plan.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_plan_bo {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("addr"),
            JAVA_LONG.withName("size"),
            JAVA_LONG.withName("offset"),
            JAVA_INT.withName("gpu_id"),
            JAVA_INT.withName("alloc_flags")
    ).withName("amdgpu_plan_bo");

    private amdgpu_plan_bo() {
    }

    public static GroupLayout layout() { return $LAYOUT; }

    public static long sizeof() { return $LAYOUT.byteSize(); }

    /** A zeroed struct. */
    public static MemorySegment allocate(SegmentAllocator allocator) { return allocator.allocate($LAYOUT); }

    /** A zeroed array of {@code count} structs. */
    public static MemorySegment allocateArray(long count, SegmentAllocator allocator) {
        return allocator.allocate(MemoryLayout.sequenceLayout(count, $LAYOUT));
    }

    /** Element {@code index} of an array of these structs. */
    public static MemorySegment asSlice(MemorySegment array, long index) {
        return array.asSlice(index * sizeof(), sizeof());
    }

    /** Views native memory at {@code address} as one struct. */
    public static MemorySegment reinterpret(MemorySegment address) { return address.reinterpret(sizeof()); }

    private static final long addr$OFFSET = 0;

    public static long addr$offset() { return addr$OFFSET; }

    public static long addr(MemorySegment struct) { return struct.get(JAVA_LONG, addr$OFFSET); }

    public static void addr(MemorySegment struct, long value) { struct.set(JAVA_LONG, addr$OFFSET, value); }

    private static final long size$OFFSET = 8;

    public static long size$offset() { return size$OFFSET; }

    public static long size(MemorySegment struct) { return struct.get(JAVA_LONG, size$OFFSET); }

    public static void size(MemorySegment struct, long value) { struct.set(JAVA_LONG, size$OFFSET, value); }

    private static final long offset$OFFSET = 16;

    public static long offset$offset() { return offset$OFFSET; }

    public static long offset(MemorySegment struct) { return struct.get(JAVA_LONG, offset$OFFSET); }

    public static void offset(MemorySegment struct, long value) { struct.set(JAVA_LONG, offset$OFFSET, value); }

    private static final long gpu_id$OFFSET = 24;

    public static long gpu_id$offset() { return gpu_id$OFFSET; }

    public static int gpu_id(MemorySegment struct) { return struct.get(JAVA_INT, gpu_id$OFFSET); }

    public static void gpu_id(MemorySegment struct, int value) { struct.set(JAVA_INT, gpu_id$OFFSET, value); }

    private static final long alloc_flags$OFFSET = 28;

    public static long alloc_flags$offset() { return alloc_flags$OFFSET; }

    public static int alloc_flags(MemorySegment struct) { return struct.get(JAVA_INT, alloc_flags$OFFSET); }

    public static void alloc_flags(MemorySegment struct, int value) { struct.set(JAVA_INT, alloc_flags$OFFSET, value); }
}

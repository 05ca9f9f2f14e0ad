package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * {@code struct amdgpu_plan_gpu} from {@code amdgpu-plugin/src/main/c/amdgpu_restore.h}, in the shape jextract generates. One GPU of a KFD file in the restore plan.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_plan_gpu {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("user_gpu_id"),
            JAVA_INT.withName("actual_gpu_id"),
            JAVA_INT.withName("render_minor"),
            JAVA_INT.withName("pad")
    ).withName("amdgpu_plan_gpu");

    private amdgpu_plan_gpu() {
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

    private static final long user_gpu_id$OFFSET = 0;

    public static long user_gpu_id$offset() { return user_gpu_id$OFFSET; }

    public static int user_gpu_id(MemorySegment struct) { return struct.get(JAVA_INT, user_gpu_id$OFFSET); }

    public static void user_gpu_id(MemorySegment struct, int value) { struct.set(JAVA_INT, user_gpu_id$OFFSET, value); }

    private static final long actual_gpu_id$OFFSET = 4;

    public static long actual_gpu_id$offset() { return actual_gpu_id$OFFSET; }

    public static int actual_gpu_id(MemorySegment struct) { return struct.get(JAVA_INT, actual_gpu_id$OFFSET); }

    public static void actual_gpu_id(MemorySegment struct, int value) { struct.set(JAVA_INT, actual_gpu_id$OFFSET, value); }

    private static final long render_minor$OFFSET = 8;

    public static long render_minor$offset() { return render_minor$OFFSET; }

    public static int render_minor(MemorySegment struct) { return struct.get(JAVA_INT, render_minor$OFFSET); }

    public static void render_minor(MemorySegment struct, int value) { struct.set(JAVA_INT, render_minor$OFFSET, value); }

    private static final long pad$OFFSET = 12;

    public static long pad$offset() { return pad$OFFSET; }

    public static int pad(MemorySegment struct) { return struct.get(JAVA_INT, pad$OFFSET); }

    public static void pad(MemorySegment struct, int value) { struct.set(JAVA_INT, pad$OFFSET, value); }
}

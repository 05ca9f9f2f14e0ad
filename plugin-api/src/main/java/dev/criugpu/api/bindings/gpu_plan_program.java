package dev.criugpu.api.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * {@code struct gpu_plan_program} from {@code native/plan/gpu_plan.h}, in the shape jextract generates. What RESTORE_EXT_FILE(file_id) runs.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class gpu_plan_program {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("file_id"),
            JAVA_INT.withName("num_steps"),
            ADDRESS.withName("steps")
    ).withName("gpu_plan_program");

    private gpu_plan_program() {
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

    private static final long file_id$OFFSET = 0;

    public static long file_id$offset() { return file_id$OFFSET; }

    public static int file_id(MemorySegment struct) { return struct.get(JAVA_INT, file_id$OFFSET); }

    public static void file_id(MemorySegment struct, int value) { struct.set(JAVA_INT, file_id$OFFSET, value); }

    private static final long num_steps$OFFSET = 4;

    public static long num_steps$offset() { return num_steps$OFFSET; }

    public static int num_steps(MemorySegment struct) { return struct.get(JAVA_INT, num_steps$OFFSET); }

    public static void num_steps(MemorySegment struct, int value) { struct.set(JAVA_INT, num_steps$OFFSET, value); }

    private static final long steps$OFFSET = 8;

    public static long steps$offset() { return steps$OFFSET; }

    public static MemorySegment steps(MemorySegment struct) { return struct.get(ADDRESS, steps$OFFSET); }

    public static void steps(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, steps$OFFSET, value); }
}

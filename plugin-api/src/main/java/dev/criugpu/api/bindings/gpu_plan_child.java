package dev.criugpu.api.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * {@code struct gpu_plan_child} from {@code native/plan/gpu_plan.h}, in the shape jextract generates. The context the shim passes to the executor in a forked child.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class gpu_plan_child {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("plan"),
            ADDRESS.withName("seam")
    ).withName("gpu_plan_child");

    private gpu_plan_child() {
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

    private static final long plan$OFFSET = 0;

    public static long plan$offset() { return plan$OFFSET; }

    public static MemorySegment plan(MemorySegment struct) { return struct.get(ADDRESS, plan$OFFSET); }

    public static void plan(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, plan$OFFSET, value); }

    private static final long seam$OFFSET = 8;

    public static long seam$offset() { return seam$OFFSET; }

    public static MemorySegment seam(MemorySegment struct) { return struct.get(ADDRESS, seam$OFFSET); }

    public static void seam(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, seam$OFFSET, value); }
}

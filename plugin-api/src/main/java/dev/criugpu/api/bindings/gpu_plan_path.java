package dev.criugpu.api.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * {@code struct gpu_plan_path} from {@code native/plan/gpu_plan.h}, in the shape jextract generates. A path pattern the plan answers UPDATE_VMA_MAP for.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class gpu_plan_path {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("pattern"),
            JAVA_INT.withName("prefix"),
            JAVA_INT.withName("reopen"),
            ADDRESS.withName("substitute")
    ).withName("gpu_plan_path");

    private gpu_plan_path() {
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

    private static final long pattern$OFFSET = 0;

    public static long pattern$offset() { return pattern$OFFSET; }

    public static MemorySegment pattern(MemorySegment struct) { return struct.get(ADDRESS, pattern$OFFSET); }

    public static void pattern(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, pattern$OFFSET, value); }

    private static final long prefix$OFFSET = 8;

    public static long prefix$offset() { return prefix$OFFSET; }

    public static int prefix(MemorySegment struct) { return struct.get(JAVA_INT, prefix$OFFSET); }

    public static void prefix(MemorySegment struct, int value) { struct.set(JAVA_INT, prefix$OFFSET, value); }

    private static final long reopen$OFFSET = 12;

    public static long reopen$offset() { return reopen$OFFSET; }

    public static int reopen(MemorySegment struct) { return struct.get(JAVA_INT, reopen$OFFSET); }

    public static void reopen(MemorySegment struct, int value) { struct.set(JAVA_INT, reopen$OFFSET, value); }

    private static final long substitute$OFFSET = 16;

    public static long substitute$offset() { return substitute$OFFSET; }

    public static MemorySegment substitute(MemorySegment struct) { return struct.get(ADDRESS, substitute$OFFSET); }

    public static void substitute(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, substitute$OFFSET, value); }
}

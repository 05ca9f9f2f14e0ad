package dev.criugpu.api.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct gpu_plan_vma} from {@code native/plan/gpu_plan.h}, in the shape jextract generates. A device mapping whose offset the program moved.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class gpu_plan_vma {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("addr"),
            JAVA_LONG.withName("old_offset"),
            ADDRESS.withName("new_offset"),
            JAVA_INT.withName("slot"),
            JAVA_INT.withName("pad")
    ).withName("gpu_plan_vma");

    private gpu_plan_vma() {
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

    private static final long old_offset$OFFSET = 8;

    public static long old_offset$offset() { return old_offset$OFFSET; }

    public static long old_offset(MemorySegment struct) { return struct.get(JAVA_LONG, old_offset$OFFSET); }

    public static void old_offset(MemorySegment struct, long value) { struct.set(JAVA_LONG, old_offset$OFFSET, value); }

    private static final long new_offset$OFFSET = 16;

    public static long new_offset$offset() { return new_offset$OFFSET; }

    public static MemorySegment new_offset(MemorySegment struct) { return struct.get(ADDRESS, new_offset$OFFSET); }

    public static void new_offset(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, new_offset$OFFSET, value); }

    private static final long slot$OFFSET = 24;

    public static long slot$offset() { return slot$OFFSET; }

    public static int slot(MemorySegment struct) { return struct.get(JAVA_INT, slot$OFFSET); }

    public static void slot(MemorySegment struct, int value) { struct.set(JAVA_INT, slot$OFFSET, value); }

    private static final long pad$OFFSET = 28;

    public static long pad$offset() { return pad$OFFSET; }

    public static int pad(MemorySegment struct) { return struct.get(JAVA_INT, pad$OFFSET); }

    public static void pad(MemorySegment struct, int value) { struct.set(JAVA_INT, pad$OFFSET, value); }
}

package dev.criugpu.api.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct gpu_plan_step} from {@code native/plan/gpu_plan.h}, in the shape jextract generates. One step of a program.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class gpu_plan_step {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("op"),
            JAVA_INT.withName("slot"),
            JAVA_LONG.withName("arg"),
            JAVA_LONG.withName("arg2"),
            JAVA_LONG.withName("len"),
            JAVA_LONG.withName("fd_len"),
            ADDRESS.withName("buf"),
            ADDRESS.withName("fd_buf"),
            ADDRESS.withName("fd_offsets"),
            ADDRESS.withName("what")
    ).withName("gpu_plan_step");

    private gpu_plan_step() {
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

    private static final long op$OFFSET = 0;

    public static long op$offset() { return op$OFFSET; }

    public static int op(MemorySegment struct) { return struct.get(JAVA_INT, op$OFFSET); }

    public static void op(MemorySegment struct, int value) { struct.set(JAVA_INT, op$OFFSET, value); }

    private static final long slot$OFFSET = 4;

    public static long slot$offset() { return slot$OFFSET; }

    public static int slot(MemorySegment struct) { return struct.get(JAVA_INT, slot$OFFSET); }

    public static void slot(MemorySegment struct, int value) { struct.set(JAVA_INT, slot$OFFSET, value); }

    private static final long arg$OFFSET = 8;

    public static long arg$offset() { return arg$OFFSET; }

    public static long arg(MemorySegment struct) { return struct.get(JAVA_LONG, arg$OFFSET); }

    public static void arg(MemorySegment struct, long value) { struct.set(JAVA_LONG, arg$OFFSET, value); }

    private static final long arg2$OFFSET = 16;

    public static long arg2$offset() { return arg2$OFFSET; }

    public static long arg2(MemorySegment struct) { return struct.get(JAVA_LONG, arg2$OFFSET); }

    public static void arg2(MemorySegment struct, long value) { struct.set(JAVA_LONG, arg2$OFFSET, value); }

    private static final long len$OFFSET = 24;

    public static long len$offset() { return len$OFFSET; }

    public static long len(MemorySegment struct) { return struct.get(JAVA_LONG, len$OFFSET); }

    public static void len(MemorySegment struct, long value) { struct.set(JAVA_LONG, len$OFFSET, value); }

    private static final long fd_len$OFFSET = 32;

    public static long fd_len$offset() { return fd_len$OFFSET; }

    public static long fd_len(MemorySegment struct) { return struct.get(JAVA_LONG, fd_len$OFFSET); }

    public static void fd_len(MemorySegment struct, long value) { struct.set(JAVA_LONG, fd_len$OFFSET, value); }

    private static final long buf$OFFSET = 40;

    public static long buf$offset() { return buf$OFFSET; }

    public static MemorySegment buf(MemorySegment struct) { return struct.get(ADDRESS, buf$OFFSET); }

    public static void buf(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, buf$OFFSET, value); }

    private static final long fd_buf$OFFSET = 48;

    public static long fd_buf$offset() { return fd_buf$OFFSET; }

    public static MemorySegment fd_buf(MemorySegment struct) { return struct.get(ADDRESS, fd_buf$OFFSET); }

    public static void fd_buf(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, fd_buf$OFFSET, value); }

    private static final long fd_offsets$OFFSET = 56;

    public static long fd_offsets$offset() { return fd_offsets$OFFSET; }

    public static MemorySegment fd_offsets(MemorySegment struct) { return struct.get(ADDRESS, fd_offsets$OFFSET); }

    public static void fd_offsets(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, fd_offsets$OFFSET, value); }

    private static final long what$OFFSET = 64;

    public static long what$offset() { return what$OFFSET; }

    public static MemorySegment what(MemorySegment struct) { return struct.get(ADDRESS, what$OFFSET); }

    public static void what(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, what$OFFSET, value); }
}

package dev.criugpu.api.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * {@code struct gpu_plan_seam} from {@code native/plan/gpu_plan.h}, in the shape jextract generates. The calls the executor makes: libc and criu in production, a simulator in tests.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class gpu_plan_seam {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("open"),
            ADDRESS.withName("close"),
            ADDRESS.withName("ioctl"),
            ADDRESS.withName("find_unused_fd"),
            ADDRESS.withName("log"),
            ADDRESS.withName("fdstore_get")
    ).withName("gpu_plan_seam");

    private gpu_plan_seam() {
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

    private static final long open$OFFSET = 0;

    public static long open$offset() { return open$OFFSET; }

    public static MemorySegment open(MemorySegment struct) { return struct.get(ADDRESS, open$OFFSET); }

    public static void open(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, open$OFFSET, value); }

    private static final long close$OFFSET = 8;

    public static long close$offset() { return close$OFFSET; }

    public static MemorySegment close(MemorySegment struct) { return struct.get(ADDRESS, close$OFFSET); }

    public static void close(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, close$OFFSET, value); }

    private static final long ioctl$OFFSET = 16;

    public static long ioctl$offset() { return ioctl$OFFSET; }

    public static MemorySegment ioctl(MemorySegment struct) { return struct.get(ADDRESS, ioctl$OFFSET); }

    public static void ioctl(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, ioctl$OFFSET, value); }

    private static final long find_unused_fd$OFFSET = 24;

    public static long find_unused_fd$offset() { return find_unused_fd$OFFSET; }

    public static MemorySegment find_unused_fd(MemorySegment struct) { return struct.get(ADDRESS, find_unused_fd$OFFSET); }

    public static void find_unused_fd(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, find_unused_fd$OFFSET, value); }

    private static final long log$OFFSET = 32;

    public static long log$offset() { return log$OFFSET; }

    public static MemorySegment log(MemorySegment struct) { return struct.get(ADDRESS, log$OFFSET); }

    public static void log(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, log$OFFSET, value); }

    private static final long fdstore_get$OFFSET = 40;

    public static long fdstore_get$offset() { return fdstore_get$OFFSET; }

    public static MemorySegment fdstore_get(MemorySegment struct) { return struct.get(ADDRESS, fdstore_get$OFFSET); }

    public static void fdstore_get(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, fdstore_get$OFFSET, value); }
}

package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct amdgpu_cs_fence_info} from {@code libdrm/amdgpu.h}, in the shape jextract generates. User fence location of a command submission.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_cs_fence_info {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("handle"),
            JAVA_LONG.withName("offset")
    ).withName("amdgpu_cs_fence_info");

    private amdgpu_cs_fence_info() {
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

    private static final long handle$OFFSET = 0;

    public static long handle$offset() { return handle$OFFSET; }

    public static MemorySegment handle(MemorySegment struct) { return struct.get(ADDRESS, handle$OFFSET); }

    public static void handle(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, handle$OFFSET, value); }

    private static final long offset$OFFSET = 8;

    public static long offset$offset() { return offset$OFFSET; }

    public static long offset(MemorySegment struct) { return struct.get(JAVA_LONG, offset$OFFSET); }

    public static void offset(MemorySegment struct, long value) { struct.set(JAVA_LONG, offset$OFFSET, value); }
}

package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct amdgpu_bo_import_result} from {@code libdrm/amdgpu.h}, in the shape jextract generates. Result of {@code amdgpu_bo_import}.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_bo_import_result {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("buf_handle"),
            JAVA_LONG.withName("alloc_size")
    ).withName("amdgpu_bo_import_result");

    private amdgpu_bo_import_result() {
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

    private static final long buf_handle$OFFSET = 0;

    public static long buf_handle$offset() { return buf_handle$OFFSET; }

    public static MemorySegment buf_handle(MemorySegment struct) { return struct.get(ADDRESS, buf_handle$OFFSET); }

    public static void buf_handle(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, buf_handle$OFFSET, value); }

    private static final long alloc_size$OFFSET = 8;

    public static long alloc_size$offset() { return alloc_size$OFFSET; }

    public static long alloc_size(MemorySegment struct) { return struct.get(JAVA_LONG, alloc_size$OFFSET); }

    public static void alloc_size(MemorySegment struct, long value) { struct.set(JAVA_LONG, alloc_size$OFFSET, value); }
}

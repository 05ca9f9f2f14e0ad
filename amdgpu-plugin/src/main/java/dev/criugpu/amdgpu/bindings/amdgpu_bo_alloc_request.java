package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct amdgpu_bo_alloc_request} from {@code libdrm/amdgpu.h}, in the shape jextract generates. Argument of {@code amdgpu_bo_alloc}.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_bo_alloc_request {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("alloc_size"),
            JAVA_LONG.withName("phys_alignment"),
            JAVA_INT.withName("preferred_heap"),
            MemoryLayout.paddingLayout(4),
            JAVA_LONG.withName("flags")
    ).withName("amdgpu_bo_alloc_request");

    private amdgpu_bo_alloc_request() {
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

    private static final long alloc_size$OFFSET = 0;

    public static long alloc_size$offset() { return alloc_size$OFFSET; }

    public static long alloc_size(MemorySegment struct) { return struct.get(JAVA_LONG, alloc_size$OFFSET); }

    public static void alloc_size(MemorySegment struct, long value) { struct.set(JAVA_LONG, alloc_size$OFFSET, value); }

    private static final long phys_alignment$OFFSET = 8;

    public static long phys_alignment$offset() { return phys_alignment$OFFSET; }

    public static long phys_alignment(MemorySegment struct) { return struct.get(JAVA_LONG, phys_alignment$OFFSET); }

    public static void phys_alignment(MemorySegment struct, long value) { struct.set(JAVA_LONG, phys_alignment$OFFSET, value); }

    private static final long preferred_heap$OFFSET = 16;

    public static long preferred_heap$offset() { return preferred_heap$OFFSET; }

    public static int preferred_heap(MemorySegment struct) { return struct.get(JAVA_INT, preferred_heap$OFFSET); }

    public static void preferred_heap(MemorySegment struct, int value) { struct.set(JAVA_INT, preferred_heap$OFFSET, value); }

    private static final long flags$OFFSET = 24;

    public static long flags$offset() { return flags$OFFSET; }

    public static long flags(MemorySegment struct) { return struct.get(JAVA_LONG, flags$OFFSET); }

    public static void flags(MemorySegment struct, long value) { struct.set(JAVA_LONG, flags$OFFSET, value); }
}

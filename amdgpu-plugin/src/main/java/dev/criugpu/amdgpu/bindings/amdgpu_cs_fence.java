package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct amdgpu_cs_fence} from {@code libdrm/amdgpu.h}, in the shape jextract generates. A fence to query with {@code amdgpu_cs_query_fence_status}.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_cs_fence {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            JAVA_INT.withName("ip_type"),
            JAVA_INT.withName("ip_instance"),
            JAVA_INT.withName("ring"),
            MemoryLayout.paddingLayout(4),
            JAVA_LONG.withName("fence")
    ).withName("amdgpu_cs_fence");

    private amdgpu_cs_fence() {
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

    private static final long context$OFFSET = 0;

    public static long context$offset() { return context$OFFSET; }

    public static MemorySegment context(MemorySegment struct) { return struct.get(ADDRESS, context$OFFSET); }

    public static void context(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, context$OFFSET, value); }

    private static final long ip_type$OFFSET = 8;

    public static long ip_type$offset() { return ip_type$OFFSET; }

    public static int ip_type(MemorySegment struct) { return struct.get(JAVA_INT, ip_type$OFFSET); }

    public static void ip_type(MemorySegment struct, int value) { struct.set(JAVA_INT, ip_type$OFFSET, value); }

    private static final long ip_instance$OFFSET = 12;

    public static long ip_instance$offset() { return ip_instance$OFFSET; }

    public static int ip_instance(MemorySegment struct) { return struct.get(JAVA_INT, ip_instance$OFFSET); }

    public static void ip_instance(MemorySegment struct, int value) { struct.set(JAVA_INT, ip_instance$OFFSET, value); }

    private static final long ring$OFFSET = 16;

    public static long ring$offset() { return ring$OFFSET; }

    public static int ring(MemorySegment struct) { return struct.get(JAVA_INT, ring$OFFSET); }

    public static void ring(MemorySegment struct, int value) { struct.set(JAVA_INT, ring$OFFSET, value); }

    private static final long fence$OFFSET = 24;

    public static long fence$offset() { return fence$OFFSET; }

    public static long fence(MemorySegment struct) { return struct.get(JAVA_LONG, fence$OFFSET); }

    public static void fence(MemorySegment struct, long value) { struct.set(JAVA_LONG, fence$OFFSET, value); }
}

package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct amdgpu_cs_request} from {@code libdrm/amdgpu.h}, in the shape jextract generates. One command submission for {@code amdgpu_cs_submit}.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_cs_request {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("flags"),
            JAVA_INT.withName("ip_type"),
            JAVA_INT.withName("ip_instance"),
            JAVA_INT.withName("ring"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("resources"),
            JAVA_INT.withName("number_of_dependencies"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("dependencies"),
            JAVA_INT.withName("number_of_ibs"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("ibs"),
            JAVA_LONG.withName("seq_no"),
            amdgpu_cs_fence_info.layout().withName("fence_info")
    ).withName("amdgpu_cs_request");

    private amdgpu_cs_request() {
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

    private static final long flags$OFFSET = 0;

    public static long flags$offset() { return flags$OFFSET; }

    public static long flags(MemorySegment struct) { return struct.get(JAVA_LONG, flags$OFFSET); }

    public static void flags(MemorySegment struct, long value) { struct.set(JAVA_LONG, flags$OFFSET, value); }

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

    private static final long resources$OFFSET = 24;

    public static long resources$offset() { return resources$OFFSET; }

    public static MemorySegment resources(MemorySegment struct) { return struct.get(ADDRESS, resources$OFFSET); }

    public static void resources(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, resources$OFFSET, value); }

    private static final long number_of_dependencies$OFFSET = 32;

    public static long number_of_dependencies$offset() { return number_of_dependencies$OFFSET; }

    public static int number_of_dependencies(MemorySegment struct) { return struct.get(JAVA_INT, number_of_dependencies$OFFSET); }

    public static void number_of_dependencies(MemorySegment struct, int value) { struct.set(JAVA_INT, number_of_dependencies$OFFSET, value); }

    private static final long dependencies$OFFSET = 40;

    public static long dependencies$offset() { return dependencies$OFFSET; }

    public static MemorySegment dependencies(MemorySegment struct) { return struct.get(ADDRESS, dependencies$OFFSET); }

    public static void dependencies(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, dependencies$OFFSET, value); }

    private static final long number_of_ibs$OFFSET = 48;

    public static long number_of_ibs$offset() { return number_of_ibs$OFFSET; }

    public static int number_of_ibs(MemorySegment struct) { return struct.get(JAVA_INT, number_of_ibs$OFFSET); }

    public static void number_of_ibs(MemorySegment struct, int value) { struct.set(JAVA_INT, number_of_ibs$OFFSET, value); }

    private static final long ibs$OFFSET = 56;

    public static long ibs$offset() { return ibs$OFFSET; }

    public static MemorySegment ibs(MemorySegment struct) { return struct.get(ADDRESS, ibs$OFFSET); }

    public static void ibs(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, ibs$OFFSET, value); }

    private static final long seq_no$OFFSET = 64;

    public static long seq_no$offset() { return seq_no$OFFSET; }

    public static long seq_no(MemorySegment struct) { return struct.get(JAVA_LONG, seq_no$OFFSET); }

    public static void seq_no(MemorySegment struct, long value) { struct.set(JAVA_LONG, seq_no$OFFSET, value); }

    private static final long fence_info$OFFSET = 72;

    public static long fence_info$offset() { return fence_info$OFFSET; }

    /** The embedded {@code struct amdgpu_cs_fence_info} as a slice of {@code struct}. */
    public static MemorySegment fence_info(MemorySegment struct) { return struct.asSlice(fence_info$OFFSET, amdgpu_cs_fence_info.sizeof()); }
}

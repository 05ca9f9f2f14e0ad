package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * {@code struct amdgpu_plan} from {@code amdgpu-plugin/src/main/c/amdgpu_restore.h}, in the shape jextract generates. The restore plan the fork-safe executor runs in restored tasks.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_plan {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("version"),
            JAVA_INT.withName("num_kfd"),
            JAVA_INT.withName("num_render"),
            JAVA_INT.withName("refill_addr_len"),
            ADDRESS.withName("kfd"),
            ADDRESS.withName("render"),
            MemoryLayout.sequenceLayout(112, JAVA_BYTE).withName("refill_addr")
    ).withName("amdgpu_plan");

    private amdgpu_plan() {
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

    private static final long version$OFFSET = 0;

    public static long version$offset() { return version$OFFSET; }

    public static int version(MemorySegment struct) { return struct.get(JAVA_INT, version$OFFSET); }

    public static void version(MemorySegment struct, int value) { struct.set(JAVA_INT, version$OFFSET, value); }

    private static final long num_kfd$OFFSET = 4;

    public static long num_kfd$offset() { return num_kfd$OFFSET; }

    public static int num_kfd(MemorySegment struct) { return struct.get(JAVA_INT, num_kfd$OFFSET); }

    public static void num_kfd(MemorySegment struct, int value) { struct.set(JAVA_INT, num_kfd$OFFSET, value); }

    private static final long num_render$OFFSET = 8;

    public static long num_render$offset() { return num_render$OFFSET; }

    public static int num_render(MemorySegment struct) { return struct.get(JAVA_INT, num_render$OFFSET); }

    public static void num_render(MemorySegment struct, int value) { struct.set(JAVA_INT, num_render$OFFSET, value); }

    private static final long refill_addr_len$OFFSET = 12;

    public static long refill_addr_len$offset() { return refill_addr_len$OFFSET; }

    public static int refill_addr_len(MemorySegment struct) { return struct.get(JAVA_INT, refill_addr_len$OFFSET); }

    public static void refill_addr_len(MemorySegment struct, int value) { struct.set(JAVA_INT, refill_addr_len$OFFSET, value); }

    private static final long kfd$OFFSET = 16;

    public static long kfd$offset() { return kfd$OFFSET; }

    public static MemorySegment kfd(MemorySegment struct) { return struct.get(ADDRESS, kfd$OFFSET); }

    public static void kfd(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, kfd$OFFSET, value); }

    private static final long render$OFFSET = 24;

    public static long render$offset() { return render$OFFSET; }

    public static MemorySegment render(MemorySegment struct) { return struct.get(ADDRESS, render$OFFSET); }

    public static void render(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, render$OFFSET, value); }

    private static final long refill_addr$OFFSET = 32;
    private static final long refill_addr$SIZE = 112;

    public static long refill_addr$offset() { return refill_addr$OFFSET; }

    /** The 112 bytes of {@code refill_addr}, as a slice of {@code struct}. */
    public static MemorySegment refill_addr(MemorySegment struct) { return struct.asSlice(refill_addr$OFFSET, refill_addr$SIZE); }
}

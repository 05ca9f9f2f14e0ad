package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct amdgpu_cs_ib_info} from {@code libdrm/amdgpu.h}, in the shape jextract generates. One indirect buffer of a command submission.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_cs_ib_info {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("flags"),
            JAVA_LONG.withName("ib_mc_address"),
            JAVA_INT.withName("size"),
            MemoryLayout.paddingLayout(4)
    ).withName("amdgpu_cs_ib_info");

    private amdgpu_cs_ib_info() {
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

    private static final long ib_mc_address$OFFSET = 8;

    public static long ib_mc_address$offset() { return ib_mc_address$OFFSET; }

    public static long ib_mc_address(MemorySegment struct) { return struct.get(JAVA_LONG, ib_mc_address$OFFSET); }

    public static void ib_mc_address(MemorySegment struct, long value) { struct.set(JAVA_LONG, ib_mc_address$OFFSET, value); }

    private static final long size$OFFSET = 16;

    public static long size$offset() { return size$OFFSET; }

    public static int size(MemorySegment struct) { return struct.get(JAVA_INT, size$OFFSET); }

    public static void size(MemorySegment struct, int value) { struct.set(JAVA_INT, size$OFFSET, value); }
}

package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct kfd_ioctl_get_available_memory_args} from {@code linux/kfd_ioctl.h}, in the shape jextract generates. Argument of {@code AMDKFD_IOC_AVAILABLE_MEMORY} (KFD 1.11).
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class kfd_ioctl_get_available_memory_args {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("available"),
            JAVA_INT.withName("gpu_id"),
            JAVA_INT.withName("pad")
    ).withName("kfd_ioctl_get_available_memory_args");

    private kfd_ioctl_get_available_memory_args() {
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

    private static final long available$OFFSET = 0;

    public static long available$offset() { return available$OFFSET; }

    public static long available(MemorySegment struct) { return struct.get(JAVA_LONG, available$OFFSET); }

    public static void available(MemorySegment struct, long value) { struct.set(JAVA_LONG, available$OFFSET, value); }

    private static final long gpu_id$OFFSET = 8;

    public static long gpu_id$offset() { return gpu_id$OFFSET; }

    public static int gpu_id(MemorySegment struct) { return struct.get(JAVA_INT, gpu_id$OFFSET); }

    public static void gpu_id(MemorySegment struct, int value) { struct.set(JAVA_INT, gpu_id$OFFSET, value); }

    private static final long pad$OFFSET = 12;

    public static long pad$offset() { return pad$OFFSET; }

    public static int pad(MemorySegment struct) { return struct.get(JAVA_INT, pad$OFFSET); }

    public static void pad(MemorySegment struct, int value) { struct.set(JAVA_INT, pad$OFFSET, value); }
}

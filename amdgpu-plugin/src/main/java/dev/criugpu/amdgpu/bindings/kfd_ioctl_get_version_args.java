package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * {@code struct kfd_ioctl_get_version_args} from {@code linux/kfd_ioctl.h}, in the shape jextract generates. Argument of {@code AMDKFD_IOC_GET_VERSION}.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class kfd_ioctl_get_version_args {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("major_version"),
            JAVA_INT.withName("minor_version")
    ).withName("kfd_ioctl_get_version_args");

    private kfd_ioctl_get_version_args() {
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

    private static final long major_version$OFFSET = 0;

    public static long major_version$offset() { return major_version$OFFSET; }

    public static int major_version(MemorySegment struct) { return struct.get(JAVA_INT, major_version$OFFSET); }

    public static void major_version(MemorySegment struct, int value) { struct.set(JAVA_INT, major_version$OFFSET, value); }

    private static final long minor_version$OFFSET = 4;

    public static long minor_version$offset() { return minor_version$OFFSET; }

    public static int minor_version(MemorySegment struct) { return struct.get(JAVA_INT, minor_version$OFFSET); }

    public static void minor_version(MemorySegment struct, int value) { struct.set(JAVA_INT, minor_version$OFFSET, value); }
}

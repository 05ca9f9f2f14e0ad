package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct kfd_ioctl_criu_args} from {@code linux/kfd_ioctl.h}, in the shape jextract generates. Argument of {@code AMDKFD_IOC_CRIU_OP}; the pointers are user addresses as u64.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class kfd_ioctl_criu_args {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("devices"),
            JAVA_LONG.withName("bos"),
            JAVA_LONG.withName("priv_data"),
            JAVA_LONG.withName("priv_data_size"),
            JAVA_INT.withName("num_devices"),
            JAVA_INT.withName("num_bos"),
            JAVA_INT.withName("num_objects"),
            JAVA_INT.withName("pid"),
            JAVA_INT.withName("op"),
            MemoryLayout.paddingLayout(4)
    ).withName("kfd_ioctl_criu_args");

    private kfd_ioctl_criu_args() {
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

    private static final long devices$OFFSET = 0;

    public static long devices$offset() { return devices$OFFSET; }

    public static long devices(MemorySegment struct) { return struct.get(JAVA_LONG, devices$OFFSET); }

    public static void devices(MemorySegment struct, long value) { struct.set(JAVA_LONG, devices$OFFSET, value); }

    private static final long bos$OFFSET = 8;

    public static long bos$offset() { return bos$OFFSET; }

    public static long bos(MemorySegment struct) { return struct.get(JAVA_LONG, bos$OFFSET); }

    public static void bos(MemorySegment struct, long value) { struct.set(JAVA_LONG, bos$OFFSET, value); }

    private static final long priv_data$OFFSET = 16;

    public static long priv_data$offset() { return priv_data$OFFSET; }

    public static long priv_data(MemorySegment struct) { return struct.get(JAVA_LONG, priv_data$OFFSET); }

    public static void priv_data(MemorySegment struct, long value) { struct.set(JAVA_LONG, priv_data$OFFSET, value); }

    private static final long priv_data_size$OFFSET = 24;

    public static long priv_data_size$offset() { return priv_data_size$OFFSET; }

    public static long priv_data_size(MemorySegment struct) { return struct.get(JAVA_LONG, priv_data_size$OFFSET); }

    public static void priv_data_size(MemorySegment struct, long value) { struct.set(JAVA_LONG, priv_data_size$OFFSET, value); }

    private static final long num_devices$OFFSET = 32;

    public static long num_devices$offset() { return num_devices$OFFSET; }

    public static int num_devices(MemorySegment struct) { return struct.get(JAVA_INT, num_devices$OFFSET); }

    public static void num_devices(MemorySegment struct, int value) { struct.set(JAVA_INT, num_devices$OFFSET, value); }

    private static final long num_bos$OFFSET = 36;

    public static long num_bos$offset() { return num_bos$OFFSET; }

    public static int num_bos(MemorySegment struct) { return struct.get(JAVA_INT, num_bos$OFFSET); }

    public static void num_bos(MemorySegment struct, int value) { struct.set(JAVA_INT, num_bos$OFFSET, value); }

    private static final long num_objects$OFFSET = 40;

    public static long num_objects$offset() { return num_objects$OFFSET; }

    public static int num_objects(MemorySegment struct) { return struct.get(JAVA_INT, num_objects$OFFSET); }

    public static void num_objects(MemorySegment struct, int value) { struct.set(JAVA_INT, num_objects$OFFSET, value); }

    private static final long pid$OFFSET = 44;

    public static long pid$offset() { return pid$OFFSET; }

    public static int pid(MemorySegment struct) { return struct.get(JAVA_INT, pid$OFFSET); }

    public static void pid(MemorySegment struct, int value) { struct.set(JAVA_INT, pid$OFFSET, value); }

    private static final long op$OFFSET = 48;

    public static long op$offset() { return op$OFFSET; }

    public static int op(MemorySegment struct) { return struct.get(JAVA_INT, op$OFFSET); }

    public static void op(MemorySegment struct, int value) { struct.set(JAVA_INT, op$OFFSET, value); }
}

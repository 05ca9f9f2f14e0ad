package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct amdgpu_plan_kfd} from {@code amdgpu-plugin/src/main/c/amdgpu_restore.h}, in the shape jextract generates. One KFD file in the restore plan.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_plan_kfd {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("file_id"),
            JAVA_INT.withName("vpid"),
            JAVA_INT.withName("num_gpus"),
            JAVA_INT.withName("num_bos"),
            JAVA_INT.withName("num_objects"),
            JAVA_INT.withName("pad"),
            JAVA_LONG.withName("priv_size"),
            ADDRESS.withName("gpus"),
            ADDRESS.withName("bos"),
            ADDRESS.withName("priv")
    ).withName("amdgpu_plan_kfd");

    private amdgpu_plan_kfd() {
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

    private static final long file_id$OFFSET = 0;

    public static long file_id$offset() { return file_id$OFFSET; }

    public static int file_id(MemorySegment struct) { return struct.get(JAVA_INT, file_id$OFFSET); }

    public static void file_id(MemorySegment struct, int value) { struct.set(JAVA_INT, file_id$OFFSET, value); }

    private static final long vpid$OFFSET = 4;

    public static long vpid$offset() { return vpid$OFFSET; }

    public static int vpid(MemorySegment struct) { return struct.get(JAVA_INT, vpid$OFFSET); }

    public static void vpid(MemorySegment struct, int value) { struct.set(JAVA_INT, vpid$OFFSET, value); }

    private static final long num_gpus$OFFSET = 8;

    public static long num_gpus$offset() { return num_gpus$OFFSET; }

    public static int num_gpus(MemorySegment struct) { return struct.get(JAVA_INT, num_gpus$OFFSET); }

    public static void num_gpus(MemorySegment struct, int value) { struct.set(JAVA_INT, num_gpus$OFFSET, value); }

    private static final long num_bos$OFFSET = 12;

    public static long num_bos$offset() { return num_bos$OFFSET; }

    public static int num_bos(MemorySegment struct) { return struct.get(JAVA_INT, num_bos$OFFSET); }

    public static void num_bos(MemorySegment struct, int value) { struct.set(JAVA_INT, num_bos$OFFSET, value); }

    private static final long num_objects$OFFSET = 16;

    public static long num_objects$offset() { return num_objects$OFFSET; }

    public static int num_objects(MemorySegment struct) { return struct.get(JAVA_INT, num_objects$OFFSET); }

    public static void num_objects(MemorySegment struct, int value) { struct.set(JAVA_INT, num_objects$OFFSET, value); }

    private static final long pad$OFFSET = 20;

    public static long pad$offset() { return pad$OFFSET; }

    public static int pad(MemorySegment struct) { return struct.get(JAVA_INT, pad$OFFSET); }

    public static void pad(MemorySegment struct, int value) { struct.set(JAVA_INT, pad$OFFSET, value); }

    private static final long priv_size$OFFSET = 24;

    public static long priv_size$offset() { return priv_size$OFFSET; }

    public static long priv_size(MemorySegment struct) { return struct.get(JAVA_LONG, priv_size$OFFSET); }

    public static void priv_size(MemorySegment struct, long value) { struct.set(JAVA_LONG, priv_size$OFFSET, value); }

    private static final long gpus$OFFSET = 32;

    public static long gpus$offset() { return gpus$OFFSET; }

    public static MemorySegment gpus(MemorySegment struct) { return struct.get(ADDRESS, gpus$OFFSET); }

    public static void gpus(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, gpus$OFFSET, value); }

    private static final long bos$OFFSET = 40;

    public static long bos$offset() { return bos$OFFSET; }

    public static MemorySegment bos(MemorySegment struct) { return struct.get(ADDRESS, bos$OFFSET); }

    public static void bos(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, bos$OFFSET, value); }

    private static final long priv$OFFSET = 48;

    public static long priv$offset() { return priv$OFFSET; }

    public static MemorySegment priv(MemorySegment struct) { return struct.get(ADDRESS, priv$OFFSET); }

    public static void priv(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, priv$OFFSET, value); }
}

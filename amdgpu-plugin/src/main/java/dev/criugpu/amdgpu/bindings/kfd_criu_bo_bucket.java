package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct kfd_criu_bo_bucket} from {@code linux/kfd_ioctl.h}, in the shape jextract generates. One buffer object of a CRIU CHECKPOINT/RESTORE.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class kfd_criu_bo_bucket {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("addr"),
            JAVA_LONG.withName("size"),
            JAVA_LONG.withName("offset"),
            JAVA_LONG.withName("restored_offset"),
            JAVA_INT.withName("gpu_id"),
            JAVA_INT.withName("alloc_flags"),
            JAVA_INT.withName("dmabuf_fd"),
            JAVA_INT.withName("pad")
    ).withName("kfd_criu_bo_bucket");

    private kfd_criu_bo_bucket() {
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

    private static final long addr$OFFSET = 0;

    public static long addr$offset() { return addr$OFFSET; }

    public static long addr(MemorySegment struct) { return struct.get(JAVA_LONG, addr$OFFSET); }

    public static void addr(MemorySegment struct, long value) { struct.set(JAVA_LONG, addr$OFFSET, value); }

    private static final long size$OFFSET = 8;

    public static long size$offset() { return size$OFFSET; }

    public static long size(MemorySegment struct) { return struct.get(JAVA_LONG, size$OFFSET); }

    public static void size(MemorySegment struct, long value) { struct.set(JAVA_LONG, size$OFFSET, value); }

    private static final long offset$OFFSET = 16;

    public static long offset$offset() { return offset$OFFSET; }

    public static long offset(MemorySegment struct) { return struct.get(JAVA_LONG, offset$OFFSET); }

    public static void offset(MemorySegment struct, long value) { struct.set(JAVA_LONG, offset$OFFSET, value); }

    private static final long restored_offset$OFFSET = 24;

    public static long restored_offset$offset() { return restored_offset$OFFSET; }

    public static long restored_offset(MemorySegment struct) { return struct.get(JAVA_LONG, restored_offset$OFFSET); }

    public static void restored_offset(MemorySegment struct, long value) { struct.set(JAVA_LONG, restored_offset$OFFSET, value); }

    private static final long gpu_id$OFFSET = 32;

    public static long gpu_id$offset() { return gpu_id$OFFSET; }

    public static int gpu_id(MemorySegment struct) { return struct.get(JAVA_INT, gpu_id$OFFSET); }

    public static void gpu_id(MemorySegment struct, int value) { struct.set(JAVA_INT, gpu_id$OFFSET, value); }

    private static final long alloc_flags$OFFSET = 36;

    public static long alloc_flags$offset() { return alloc_flags$OFFSET; }

    public static int alloc_flags(MemorySegment struct) { return struct.get(JAVA_INT, alloc_flags$OFFSET); }

    public static void alloc_flags(MemorySegment struct, int value) { struct.set(JAVA_INT, alloc_flags$OFFSET, value); }

    private static final long dmabuf_fd$OFFSET = 40;

    public static long dmabuf_fd$offset() { return dmabuf_fd$OFFSET; }

    public static int dmabuf_fd(MemorySegment struct) { return struct.get(JAVA_INT, dmabuf_fd$OFFSET); }

    public static void dmabuf_fd(MemorySegment struct, int value) { struct.set(JAVA_INT, dmabuf_fd$OFFSET, value); }

    private static final long pad$OFFSET = 44;

    public static long pad$offset() { return pad$OFFSET; }

    public static int pad(MemorySegment struct) { return struct.get(JAVA_INT, pad$OFFSET); }

    public static void pad(MemorySegment struct, int value) { struct.set(JAVA_INT, pad$OFFSET, value); }
}

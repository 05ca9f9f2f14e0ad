package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * {@code struct amdgpu_refill_head} from {@code amdgpu-plugin/src/main/c/amdgpu_restore.h}, in the shape jextract generates. The head of a refill request a restored task sends to criu's main process.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class amdgpu_refill_head {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("magic"),
            JAVA_INT.withName("file_id"),
            JAVA_INT.withName("num_fds"),
            JAVA_INT.withName("pad")
    ).withName("amdgpu_refill_head");

    private amdgpu_refill_head() {
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

    private static final long magic$OFFSET = 0;

    public static long magic$offset() { return magic$OFFSET; }

    public static int magic(MemorySegment struct) { return struct.get(JAVA_INT, magic$OFFSET); }

    public static void magic(MemorySegment struct, int value) { struct.set(JAVA_INT, magic$OFFSET, value); }

    private static final long file_id$OFFSET = 4;

    public static long file_id$offset() { return file_id$OFFSET; }

    public static int file_id(MemorySegment struct) { return struct.get(JAVA_INT, file_id$OFFSET); }

    public static void file_id(MemorySegment struct, int value) { struct.set(JAVA_INT, file_id$OFFSET, value); }

    private static final long num_fds$OFFSET = 8;

    public static long num_fds$offset() { return num_fds$OFFSET; }

    public static int num_fds(MemorySegment struct) { return struct.get(JAVA_INT, num_fds$OFFSET); }

    public static void num_fds(MemorySegment struct, int value) { struct.set(JAVA_INT, num_fds$OFFSET, value); }

    private static final long pad$OFFSET = 12;

    public static long pad$offset() { return pad$OFFSET; }

    public static int pad(MemorySegment struct) { return struct.get(JAVA_INT, pad$OFFSET); }

    public static void pad(MemorySegment struct, int value) { struct.set(JAVA_INT, pad$OFFSET, value); }
}

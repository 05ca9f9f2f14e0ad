package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct iovec} from {@code <sys/uio.h>}, in the shape jextract generates. One I/O buffer.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class iovec {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("iov_base"),
            JAVA_LONG.withName("iov_len")
    ).withName("iovec");

    private iovec() {
    }

    public static GroupLayout layout() { return $LAYOUT; }

    public static long sizeof() { return $LAYOUT.byteSize(); }

    /** A zeroed struct. */
    public static MemorySegment allocate(SegmentAllocator allocator) { return allocator.allocate($LAYOUT); }

    /** Views native memory at {@code address} as one struct. */
    public static MemorySegment reinterpret(MemorySegment address) { return address.reinterpret(sizeof()); }

    private static final long iov_base$OFFSET = 0;

    public static long iov_base$offset() { return iov_base$OFFSET; }

    public static MemorySegment iov_base(MemorySegment struct) { return struct.get(ADDRESS, iov_base$OFFSET); }

    public static void iov_base(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, iov_base$OFFSET, value); }

    private static final long iov_len$OFFSET = 8;

    public static long iov_len$offset() { return iov_len$OFFSET; }

    public static long iov_len(MemorySegment struct) { return struct.get(JAVA_LONG, iov_len$OFFSET); }

    public static void iov_len(MemorySegment struct, long value) { struct.set(JAVA_LONG, iov_len$OFFSET, value); }
}

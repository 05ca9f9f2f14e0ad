package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct cmsghdr} from {@code <sys/socket.h>}, in the shape jextract generates. The head of one control message (its data follows at CMSG_DATA).
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class cmsghdr {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("cmsg_len"),
            JAVA_INT.withName("cmsg_level"),
            JAVA_INT.withName("cmsg_type")
    ).withName("cmsghdr");

    private cmsghdr() {
    }

    public static GroupLayout layout() { return $LAYOUT; }

    public static long sizeof() { return $LAYOUT.byteSize(); }

    /** A zeroed struct. */
    public static MemorySegment allocate(SegmentAllocator allocator) { return allocator.allocate($LAYOUT); }

    /** Views native memory at {@code address} as one struct. */
    public static MemorySegment reinterpret(MemorySegment address) { return address.reinterpret(sizeof()); }

    private static final long cmsg_len$OFFSET = 0;

    public static long cmsg_len$offset() { return cmsg_len$OFFSET; }

    public static long cmsg_len(MemorySegment struct) { return struct.get(JAVA_LONG, cmsg_len$OFFSET); }

    public static void cmsg_len(MemorySegment struct, long value) { struct.set(JAVA_LONG, cmsg_len$OFFSET, value); }

    private static final long cmsg_level$OFFSET = 8;

    public static long cmsg_level$offset() { return cmsg_level$OFFSET; }

    public static int cmsg_level(MemorySegment struct) { return struct.get(JAVA_INT, cmsg_level$OFFSET); }

    public static void cmsg_level(MemorySegment struct, int value) { struct.set(JAVA_INT, cmsg_level$OFFSET, value); }

    private static final long cmsg_type$OFFSET = 12;

    public static long cmsg_type$offset() { return cmsg_type$OFFSET; }

    public static int cmsg_type(MemorySegment struct) { return struct.get(JAVA_INT, cmsg_type$OFFSET); }

    public static void cmsg_type(MemorySegment struct, int value) { struct.set(JAVA_INT, cmsg_type$OFFSET, value); }
}

package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@code struct msghdr} from {@code <sys/socket.h>}, in the shape jextract generates. A message for sendmsg/recvmsg.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class msghdr {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            ADDRESS.withName("msg_name"),
            JAVA_INT.withName("msg_namelen"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("msg_iov"),
            JAVA_LONG.withName("msg_iovlen"),
            ADDRESS.withName("msg_control"),
            JAVA_LONG.withName("msg_controllen"),
            JAVA_INT.withName("msg_flags"),
            MemoryLayout.paddingLayout(4)
    ).withName("msghdr");

    private msghdr() {
    }

    public static GroupLayout layout() { return $LAYOUT; }

    public static long sizeof() { return $LAYOUT.byteSize(); }

    /** A zeroed struct. */
    public static MemorySegment allocate(SegmentAllocator allocator) { return allocator.allocate($LAYOUT); }

    /** Views native memory at {@code address} as one struct. */
    public static MemorySegment reinterpret(MemorySegment address) { return address.reinterpret(sizeof()); }

    private static final long msg_name$OFFSET = 0;

    public static long msg_name$offset() { return msg_name$OFFSET; }

    public static MemorySegment msg_name(MemorySegment struct) { return struct.get(ADDRESS, msg_name$OFFSET); }

    public static void msg_name(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, msg_name$OFFSET, value); }

    private static final long msg_namelen$OFFSET = 8;

    public static long msg_namelen$offset() { return msg_namelen$OFFSET; }

    public static int msg_namelen(MemorySegment struct) { return struct.get(JAVA_INT, msg_namelen$OFFSET); }

    public static void msg_namelen(MemorySegment struct, int value) { struct.set(JAVA_INT, msg_namelen$OFFSET, value); }

    private static final long msg_iov$OFFSET = 16;

    public static long msg_iov$offset() { return msg_iov$OFFSET; }

    public static MemorySegment msg_iov(MemorySegment struct) { return struct.get(ADDRESS, msg_iov$OFFSET); }

    public static void msg_iov(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, msg_iov$OFFSET, value); }

    private static final long msg_iovlen$OFFSET = 24;

    public static long msg_iovlen$offset() { return msg_iovlen$OFFSET; }

    public static long msg_iovlen(MemorySegment struct) { return struct.get(JAVA_LONG, msg_iovlen$OFFSET); }

    public static void msg_iovlen(MemorySegment struct, long value) { struct.set(JAVA_LONG, msg_iovlen$OFFSET, value); }

    private static final long msg_control$OFFSET = 32;

    public static long msg_control$offset() { return msg_control$OFFSET; }

    public static MemorySegment msg_control(MemorySegment struct) { return struct.get(ADDRESS, msg_control$OFFSET); }

    public static void msg_control(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, msg_control$OFFSET, value); }

    private static final long msg_controllen$OFFSET = 40;

    public static long msg_controllen$offset() { return msg_controllen$OFFSET; }

    public static long msg_controllen(MemorySegment struct) { return struct.get(JAVA_LONG, msg_controllen$OFFSET); }

    public static void msg_controllen(MemorySegment struct, long value) { struct.set(JAVA_LONG, msg_controllen$OFFSET, value); }

    private static final long msg_flags$OFFSET = 48;

    public static long msg_flags$offset() { return msg_flags$OFFSET; }

    public static int msg_flags(MemorySegment struct) { return struct.get(JAVA_INT, msg_flags$OFFSET); }

    public static void msg_flags(MemorySegment struct, int value) { struct.set(JAVA_INT, msg_flags$OFFSET, value); }
}

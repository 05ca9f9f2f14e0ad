package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * {@code struct ucred} from {@code <sys/socket.h>}, in the shape jextract generates. A peer's credentials (SO_PEERCRED).
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class ucred {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("pid"),
            JAVA_INT.withName("uid"),
            JAVA_INT.withName("gid")
    ).withName("ucred");

    private ucred() {
    }

    public static GroupLayout layout() { return $LAYOUT; }

    public static long sizeof() { return $LAYOUT.byteSize(); }

    /** A zeroed struct. */
    public static MemorySegment allocate(SegmentAllocator allocator) { return allocator.allocate($LAYOUT); }

    /** Views native memory at {@code address} as one struct. */
    public static MemorySegment reinterpret(MemorySegment address) { return address.reinterpret(sizeof()); }

    private static final long pid$OFFSET = 0;

    public static long pid$offset() { return pid$OFFSET; }

    public static int pid(MemorySegment struct) { return struct.get(JAVA_INT, pid$OFFSET); }

    public static void pid(MemorySegment struct, int value) { struct.set(JAVA_INT, pid$OFFSET, value); }

    private static final long uid$OFFSET = 4;

    public static long uid$offset() { return uid$OFFSET; }

    public static int uid(MemorySegment struct) { return struct.get(JAVA_INT, uid$OFFSET); }

    public static void uid(MemorySegment struct, int value) { struct.set(JAVA_INT, uid$OFFSET, value); }

    private static final long gid$OFFSET = 8;

    public static long gid$offset() { return gid$OFFSET; }

    public static int gid(MemorySegment struct) { return struct.get(JAVA_INT, gid$OFFSET); }

    public static void gid(MemorySegment struct, int value) { struct.set(JAVA_INT, gid$OFFSET, value); }
}

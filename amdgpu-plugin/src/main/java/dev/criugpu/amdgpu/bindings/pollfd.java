package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * {@code struct pollfd} from {@code <poll.h>}, in the shape jextract generates. One fd for poll().
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class pollfd {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("fd"),
            JAVA_SHORT.withName("events"),
            JAVA_SHORT.withName("revents")
    ).withName("pollfd");

    private pollfd() {
    }

    public static GroupLayout layout() { return $LAYOUT; }

    public static long sizeof() { return $LAYOUT.byteSize(); }

    /** A zeroed struct. */
    public static MemorySegment allocate(SegmentAllocator allocator) { return allocator.allocate($LAYOUT); }

    /** Views native memory at {@code address} as one struct. */
    public static MemorySegment reinterpret(MemorySegment address) { return address.reinterpret(sizeof()); }

    private static final long fd$OFFSET = 0;

    public static long fd$offset() { return fd$OFFSET; }

    public static int fd(MemorySegment struct) { return struct.get(JAVA_INT, fd$OFFSET); }

    public static void fd(MemorySegment struct, int value) { struct.set(JAVA_INT, fd$OFFSET, value); }

    private static final long events$OFFSET = 4;

    public static long events$offset() { return events$OFFSET; }

    public static short events(MemorySegment struct) { return struct.get(JAVA_SHORT, events$OFFSET); }

    public static void events(MemorySegment struct, short value) { struct.set(JAVA_SHORT, events$OFFSET, value); }

    private static final long revents$OFFSET = 6;

    public static long revents$offset() { return revents$OFFSET; }

    public static short revents(MemorySegment struct) { return struct.get(JAVA_SHORT, revents$OFFSET); }

    public static void revents(MemorySegment struct, short value) { struct.set(JAVA_SHORT, revents$OFFSET, value); }
}

package dev.criugpu.amdgpu.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * {@code struct sockaddr_un} from {@code <sys/un.h>}, in the shape jextract generates. A unix socket address.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class sockaddr_un {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_SHORT.withName("sun_family"),
            MemoryLayout.sequenceLayout(108, JAVA_BYTE).withName("sun_path")
    ).withName("sockaddr_un");

    private sockaddr_un() {
    }

    public static GroupLayout layout() { return $LAYOUT; }

    public static long sizeof() { return $LAYOUT.byteSize(); }

    /** A zeroed struct. */
    public static MemorySegment allocate(SegmentAllocator allocator) { return allocator.allocate($LAYOUT); }

    /** Views native memory at {@code address} as one struct. */
    public static MemorySegment reinterpret(MemorySegment address) { return address.reinterpret(sizeof()); }

    private static final long sun_family$OFFSET = 0;

    public static long sun_family$offset() { return sun_family$OFFSET; }

    public static short sun_family(MemorySegment struct) { return struct.get(JAVA_SHORT, sun_family$OFFSET); }

    public static void sun_family(MemorySegment struct, short value) { struct.set(JAVA_SHORT, sun_family$OFFSET, value); }

    private static final long sun_path$OFFSET = 2;

    public static long sun_path$offset() { return sun_path$OFFSET; }

    /** The 108 bytes of {@code sun_path}, as a slice of {@code struct}. */
    public static MemorySegment sun_path(MemorySegment struct) { return struct.asSlice(sun_path$OFFSET, 108); }
}

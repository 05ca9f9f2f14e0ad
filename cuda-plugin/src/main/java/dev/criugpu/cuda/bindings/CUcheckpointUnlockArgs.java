package dev.criugpu.cuda.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** {@code CUcheckpointUnlockArgs} (cuda.h): 64 reserved bytes that must be zero. */
public final class CUcheckpointUnlockArgs {
    private static final GroupLayout LAYOUT = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(8, JAVA_LONG).withName("reserved")
    ).withName("CUcheckpointUnlockArgs_st");

    private CUcheckpointUnlockArgs() {
    }

    public static GroupLayout layout() {
        return LAYOUT;
    }

    public static long sizeof() {
        return LAYOUT.byteSize();
    }

    public static long offsetOf(String field) {
        return LAYOUT.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    public static MemorySegment allocate(SegmentAllocator allocator) {
        return allocator.allocate(LAYOUT).fill((byte) 0);
    }
}

package dev.criugpu.cuda.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** {@code CUcheckpointLockArgs} (cuda.h, CUDA 12.8+): 64 bytes, all zero but {@code timeoutMs}. */
public final class CUcheckpointLockArgs {
    private static final GroupLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("timeoutMs"),
            JAVA_INT.withName("reserved0"),
            MemoryLayout.sequenceLayout(7, JAVA_LONG).withName("reserved1")
    ).withName("CUcheckpointLockArgs_st");

    private CUcheckpointLockArgs() {
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

    /** A zeroed struct. */
    public static MemorySegment allocate(SegmentAllocator allocator) {
        return allocator.allocate(LAYOUT).fill((byte) 0);
    }

    public static int timeoutMs(MemorySegment struct) {
        return struct.get(JAVA_INT, offsetOf("timeoutMs"));
    }

    public static void timeoutMs(MemorySegment struct, int value) {
        struct.set(JAVA_INT, offsetOf("timeoutMs"), value);
    }
}

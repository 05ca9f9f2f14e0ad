package dev.criugpu.cuda.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** {@code nvmlMemory_t} (nvml.h, v1): total, free and used device memory in bytes, 24 bytes. */
public final class nvmlMemory_t {
    private static final GroupLayout LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("total"),
            JAVA_LONG.withName("free"),
            JAVA_LONG.withName("used")
    ).withName("nvmlMemory_st");

    private nvmlMemory_t() {
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

    public static long total(MemorySegment struct) {
        return struct.get(JAVA_LONG, offsetOf("total"));
    }

    public static long free(MemorySegment struct) {
        return struct.get(JAVA_LONG, offsetOf("free"));
    }

    public static long used(MemorySegment struct) {
        return struct.get(JAVA_LONG, offsetOf("used"));
    }
}

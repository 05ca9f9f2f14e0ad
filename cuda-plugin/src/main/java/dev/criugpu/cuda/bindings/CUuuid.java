package dev.criugpu.cuda.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/** {@code CUuuid} (struct CUuuid_st { char bytes[16]; }) from cuda.h, in jextract shape. */
public final class CUuuid {
    private static final GroupLayout LAYOUT = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(16, JAVA_BYTE).withName("bytes")
    ).withName("CUuuid_st");

    private CUuuid() {
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

    public static byte[] bytes(MemorySegment struct) {
        return struct.asSlice(offsetOf("bytes"), 16).toArray(JAVA_BYTE);
    }

    public static void bytes(MemorySegment struct, byte[] value) {
        if (value.length != 16) throw new IllegalArgumentException("a CUuuid has 16 bytes, not " + value.length);
        MemorySegment.copy(MemorySegment.ofArray(value), 0, struct, offsetOf("bytes"), 16);
    }
}

package dev.criugpu.api.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * {@code struct gpu_plan} from {@code native/plan/gpu_plan.h}, in the shape jextract generates. The restore plan criu's forked children run.
 * Checked field by field against the real header by {@code LayoutConformanceTest}.
 */
public final class gpu_plan {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_INT.withName("version"),
            JAVA_INT.withName("num_programs"),
            JAVA_INT.withName("num_vmas"),
            JAVA_INT.withName("num_paths"),
            JAVA_INT.withName("num_slots"),
            JAVA_INT.withName("pad"),
            ADDRESS.withName("name"),
            ADDRESS.withName("programs"),
            ADDRESS.withName("vmas"),
            ADDRESS.withName("paths")
    ).withName("gpu_plan");

    private gpu_plan() {
    }

    public static GroupLayout layout() { return $LAYOUT; }

    public static long sizeof() { return $LAYOUT.byteSize(); }

    /** A zeroed struct. */
    public static MemorySegment allocate(SegmentAllocator allocator) { return allocator.allocate($LAYOUT); }

    /** A zeroed array of {@code count} structs. */
    public static MemorySegment allocateArray(long count, SegmentAllocator allocator) {
        return allocator.allocate(MemoryLayout.sequenceLayout(count, $LAYOUT));
    }

    /** Element {@code index} of an array of these structs. */
    public static MemorySegment asSlice(MemorySegment array, long index) {
        return array.asSlice(index * sizeof(), sizeof());
    }

    /** Views native memory at {@code address} as one struct. */
    public static MemorySegment reinterpret(MemorySegment address) { return address.reinterpret(sizeof()); }

    private static final long version$OFFSET = 0;

    public static long version$offset() { return version$OFFSET; }

    public static int version(MemorySegment struct) { return struct.get(JAVA_INT, version$OFFSET); }

    public static void version(MemorySegment struct, int value) { struct.set(JAVA_INT, version$OFFSET, value); }

    private static final long num_programs$OFFSET = 4;

    public static long num_programs$offset() { return num_programs$OFFSET; }

    public static int num_programs(MemorySegment struct) { return struct.get(JAVA_INT, num_programs$OFFSET); }

    public static void num_programs(MemorySegment struct, int value) { struct.set(JAVA_INT, num_programs$OFFSET, value); }

    private static final long num_vmas$OFFSET = 8;

    public static long num_vmas$offset() { return num_vmas$OFFSET; }

    public static int num_vmas(MemorySegment struct) { return struct.get(JAVA_INT, num_vmas$OFFSET); }

    public static void num_vmas(MemorySegment struct, int value) { struct.set(JAVA_INT, num_vmas$OFFSET, value); }

    private static final long num_paths$OFFSET = 12;

    public static long num_paths$offset() { return num_paths$OFFSET; }

    public static int num_paths(MemorySegment struct) { return struct.get(JAVA_INT, num_paths$OFFSET); }

    public static void num_paths(MemorySegment struct, int value) { struct.set(JAVA_INT, num_paths$OFFSET, value); }

    private static final long num_slots$OFFSET = 16;

    public static long num_slots$offset() { return num_slots$OFFSET; }

    public static int num_slots(MemorySegment struct) { return struct.get(JAVA_INT, num_slots$OFFSET); }

    public static void num_slots(MemorySegment struct, int value) { struct.set(JAVA_INT, num_slots$OFFSET, value); }

    private static final long pad$OFFSET = 20;

    public static long pad$offset() { return pad$OFFSET; }

    public static int pad(MemorySegment struct) { return struct.get(JAVA_INT, pad$OFFSET); }

    public static void pad(MemorySegment struct, int value) { struct.set(JAVA_INT, pad$OFFSET, value); }

    private static final long name$OFFSET = 24;

    public static long name$offset() { return name$OFFSET; }

    public static MemorySegment name(MemorySegment struct) { return struct.get(ADDRESS, name$OFFSET); }

    public static void name(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, name$OFFSET, value); }

    private static final long programs$OFFSET = 32;

    public static long programs$offset() { return programs$OFFSET; }

    public static MemorySegment programs(MemorySegment struct) { return struct.get(ADDRESS, programs$OFFSET); }

    public static void programs(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, programs$OFFSET, value); }

    private static final long vmas$OFFSET = 40;

    public static long vmas$offset() { return vmas$OFFSET; }

    public static MemorySegment vmas(MemorySegment struct) { return struct.get(ADDRESS, vmas$OFFSET); }

    public static void vmas(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, vmas$OFFSET, value); }

    private static final long paths$OFFSET = 48;

    public static long paths$offset() { return paths$OFFSET; }

    public static MemorySegment paths(MemorySegment struct) { return struct.get(ADDRESS, paths$OFFSET); }

    public static void paths(MemorySegment struct, MemorySegment value) { struct.set(ADDRESS, paths$OFFSET, value); }
}

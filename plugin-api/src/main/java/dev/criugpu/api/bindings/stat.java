package dev.criugpu.api.bindings;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * glibc's x86-64 {@code struct stat} ({@code sys/stat.h}), in the shape jextract generates: HANDLE_DEVICE_VMA gets a
 * pointer to one, which the hook dispatcher turns into a {@link dev.criugpu.api.DeviceFile}. Checked field by field
 * against the real header by amdgpu-plugin's {@code LayoutConformanceTest}.
 */
public final class stat {
    private static final GroupLayout $LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("st_dev"),
            JAVA_LONG.withName("st_ino"),
            JAVA_LONG.withName("st_nlink"),
            JAVA_INT.withName("st_mode"),
            JAVA_INT.withName("st_uid"),
            JAVA_INT.withName("st_gid"),
            JAVA_INT.withName("__pad0"),
            JAVA_LONG.withName("st_rdev"),
            JAVA_LONG.withName("st_size"),
            JAVA_LONG.withName("st_blksize"),
            JAVA_LONG.withName("st_blocks"),
            MemoryLayout.sequenceLayout(2, JAVA_LONG).withName("st_atim"),
            MemoryLayout.sequenceLayout(2, JAVA_LONG).withName("st_mtim"),
            MemoryLayout.sequenceLayout(2, JAVA_LONG).withName("st_ctim"),
            MemoryLayout.sequenceLayout(3, JAVA_LONG).withName("__glibc_reserved")
    ).withName("stat");

    private stat() {
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

    private static final long st_dev$OFFSET = 0;

    public static long st_dev$offset() { return st_dev$OFFSET; }

    public static long st_dev(MemorySegment struct) { return struct.get(JAVA_LONG, st_dev$OFFSET); }

    public static void st_dev(MemorySegment struct, long value) { struct.set(JAVA_LONG, st_dev$OFFSET, value); }

    private static final long st_ino$OFFSET = 8;

    public static long st_ino$offset() { return st_ino$OFFSET; }

    public static long st_ino(MemorySegment struct) { return struct.get(JAVA_LONG, st_ino$OFFSET); }

    public static void st_ino(MemorySegment struct, long value) { struct.set(JAVA_LONG, st_ino$OFFSET, value); }

    private static final long st_nlink$OFFSET = 16;

    public static long st_nlink$offset() { return st_nlink$OFFSET; }

    public static long st_nlink(MemorySegment struct) { return struct.get(JAVA_LONG, st_nlink$OFFSET); }

    public static void st_nlink(MemorySegment struct, long value) { struct.set(JAVA_LONG, st_nlink$OFFSET, value); }

    private static final long st_mode$OFFSET = 24;

    public static long st_mode$offset() { return st_mode$OFFSET; }

    public static int st_mode(MemorySegment struct) { return struct.get(JAVA_INT, st_mode$OFFSET); }

    public static void st_mode(MemorySegment struct, int value) { struct.set(JAVA_INT, st_mode$OFFSET, value); }

    private static final long st_uid$OFFSET = 28;

    public static long st_uid$offset() { return st_uid$OFFSET; }

    public static int st_uid(MemorySegment struct) { return struct.get(JAVA_INT, st_uid$OFFSET); }

    public static void st_uid(MemorySegment struct, int value) { struct.set(JAVA_INT, st_uid$OFFSET, value); }

    private static final long st_gid$OFFSET = 32;

    public static long st_gid$offset() { return st_gid$OFFSET; }

    public static int st_gid(MemorySegment struct) { return struct.get(JAVA_INT, st_gid$OFFSET); }

    public static void st_gid(MemorySegment struct, int value) { struct.set(JAVA_INT, st_gid$OFFSET, value); }

    private static final long __pad0$OFFSET = 36;

    public static long __pad0$offset() { return __pad0$OFFSET; }

    public static int __pad0(MemorySegment struct) { return struct.get(JAVA_INT, __pad0$OFFSET); }

    public static void __pad0(MemorySegment struct, int value) { struct.set(JAVA_INT, __pad0$OFFSET, value); }

    private static final long st_rdev$OFFSET = 40;

    public static long st_rdev$offset() { return st_rdev$OFFSET; }

    public static long st_rdev(MemorySegment struct) { return struct.get(JAVA_LONG, st_rdev$OFFSET); }

    public static void st_rdev(MemorySegment struct, long value) { struct.set(JAVA_LONG, st_rdev$OFFSET, value); }

    private static final long st_size$OFFSET = 48;

    public static long st_size$offset() { return st_size$OFFSET; }

    public static long st_size(MemorySegment struct) { return struct.get(JAVA_LONG, st_size$OFFSET); }

    public static void st_size(MemorySegment struct, long value) { struct.set(JAVA_LONG, st_size$OFFSET, value); }

    private static final long st_blksize$OFFSET = 56;

    public static long st_blksize$offset() { return st_blksize$OFFSET; }

    public static long st_blksize(MemorySegment struct) { return struct.get(JAVA_LONG, st_blksize$OFFSET); }

    public static void st_blksize(MemorySegment struct, long value) { struct.set(JAVA_LONG, st_blksize$OFFSET, value); }

    private static final long st_blocks$OFFSET = 64;

    public static long st_blocks$offset() { return st_blocks$OFFSET; }

    public static long st_blocks(MemorySegment struct) { return struct.get(JAVA_LONG, st_blocks$OFFSET); }

    public static void st_blocks(MemorySegment struct, long value) { struct.set(JAVA_LONG, st_blocks$OFFSET, value); }

    private static final long st_atim$OFFSET = 72;
    private static final long st_atim$SIZE = 16;

    public static long st_atim$offset() { return st_atim$OFFSET; }

    /** The st_atim array (2 of u64) as a slice of {@code struct}. */
    public static MemorySegment st_atim(MemorySegment struct) { return struct.asSlice(st_atim$OFFSET, st_atim$SIZE); }

    private static final long st_mtim$OFFSET = 88;
    private static final long st_mtim$SIZE = 16;

    public static long st_mtim$offset() { return st_mtim$OFFSET; }

    /** The st_mtim array (2 of u64) as a slice of {@code struct}. */
    public static MemorySegment st_mtim(MemorySegment struct) { return struct.asSlice(st_mtim$OFFSET, st_mtim$SIZE); }

    private static final long st_ctim$OFFSET = 104;
    private static final long st_ctim$SIZE = 16;

    public static long st_ctim$offset() { return st_ctim$OFFSET; }

    /** The st_ctim array (2 of u64) as a slice of {@code struct}. */
    public static MemorySegment st_ctim(MemorySegment struct) { return struct.asSlice(st_ctim$OFFSET, st_ctim$SIZE); }

    private static final long __glibc_reserved$OFFSET = 120;
    private static final long __glibc_reserved$SIZE = 24;

    public static long __glibc_reserved$offset() { return __glibc_reserved$OFFSET; }

    /** The __glibc_reserved array (3 of u64) as a slice of {@code struct}. */
    public static MemorySegment __glibc_reserved(MemorySegment struct) { return struct.asSlice(__glibc_reserved$OFFSET, __glibc_reserved$SIZE); }
}

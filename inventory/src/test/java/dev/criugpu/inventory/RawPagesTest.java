package dev.criugpu.inventory;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RawPagesTest {
    @TempDir
    Path tmp;

    private static MemorySegment pattern(Arena arena, long size, long seed) {
        MemorySegment s = arena.allocate(size, 8);
        for (long i = 0; i < size / 8; i++) s.setAtIndex(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L ^ seed);
        return s;
    }

    @Test
    void nativeMemoryRoundTripAcrossChunks() throws Exception {
        long size = RawPages.CHUNK + (5L << 20) + 4096; // more than one chunk, not a multiple of it
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = pattern(arena, size, 7);
            Path file = tmp.resolve("pages-1.img");
            assertEquals(size, RawPages.write(file, src.asByteBuffer()));
            assertEquals(size, Files.size(file));
            MemorySegment dst = arena.allocate(size, 8);
            assertEquals(size, RawPages.read(file, dst.asByteBuffer()));
            assertEquals(-1, src.mismatch(dst));
        }
    }

    @Test
    void streamedWritesAppendAndReadsResume() throws Exception {
        Path file = tmp.resolve("cuda-plugin-pages-7.img");
        try (Arena arena = Arena.ofConfined(); RawPages.Writer w = RawPages.create(file)) {
            w.write(pattern(arena, 8192, 1).asByteBuffer());
            w.write(ByteBuffer.wrap(new byte[] {1, 2, 3}));
            assertFalse(Files.exists(file), "invisible until commit");
            w.commit();
            assertEquals(8195, w.written());
        }
        try (Arena arena = Arena.ofConfined(); RawPages.Reader r = RawPages.open(file)) {
            assertEquals(8195, r.size());
            MemorySegment first = arena.allocate(8192, 8);
            r.readFully(first.asByteBuffer());
            assertEquals(-1, first.mismatch(pattern(arena, 8192, 1)));
            ByteBuffer rest = ByteBuffer.allocate(10);
            assertEquals(3, r.readInto(rest));
            assertEquals(-1, r.readInto(rest));
        }
    }

    @Test
    void abandonedWriteLeavesNothingAndKeepsTheOldFile() throws Exception {
        Path file = tmp.resolve("pages-2.img");
        Files.write(file, new byte[] {9, 9});
        try (RawPages.Writer w = RawPages.create(file)) {
            w.write(ByteBuffer.wrap(new byte[100]));
        }
        assertEquals(2, Files.size(file));
        try (var s = Files.list(tmp)) {
            assertEquals(1, s.count(), "temporary file removed");
        }
    }

    @Test
    void shortFileAndSmallBufferAreClearErrors() throws Exception {
        Path file = tmp.resolve("pages-3.img");
        Files.write(file, new byte[100]);
        try (Arena arena = Arena.ofConfined()) {
            ImageException small = assertThrows(ImageException.class, () -> RawPages.read(file, arena.allocate(50).asByteBuffer()));
            assertTrue(small.getMessage().startsWith(file + ": 100 bytes do not fit"), small.getMessage());
            try (RawPages.Reader r = RawPages.open(file)) {
                ImageException past = assertThrows(ImageException.class, () -> r.readFully(arena.allocate(200).asByteBuffer()));
                assertTrue(past.getMessage().contains("file has 100 left"), past.getMessage());
            }
        }
        Path missing = tmp.resolve("pages-4.img");
        ImageException e = assertThrows(ImageException.class, () -> RawPages.open(missing));
        assertEquals(missing + ": no such raw image file", e.getMessage());
    }
}

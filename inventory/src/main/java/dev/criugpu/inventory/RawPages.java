package dev.criugpu.inventory;

import dev.criugpu.api.sys.RegularFiles;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Raw page files (pages-*.img, a plugin's raw GPU memory dumps): bytes with no header, streamed through a
 * {@link FileChannel} straight from and into native memory, in chunks, so multi-GiB files never pass through
 * the Java heap.
 *
 * <pre>{@code
 * try (RawPages.Writer w = RawPages.create(dir.resolve("cuda-plugin-pages-42.img"))) {
 *     w.write(deviceCopySegment);   // any number of times
 *     w.commit();                   // fsync + atomic rename
 * }
 * try (RawPages.Reader r = RawPages.open(file)) {
 *     r.readFully(targetSegment);   // exactly size() bytes, or readInto(...) piecewise
 * }
 * }</pre>
 */
public final class RawPages {
    /** Largest single write/read handed to the kernel; larger segments are sliced. */
    static final int CHUNK = 64 << 20;

    private RawPages() {
    }

    public static Writer create(Path file) throws ImageException {
        return Writer.create(file);
    }

    public static Reader open(Path file) throws ImageException {
        return Reader.open(file);
    }

    /** Writes {@code data} as the whole raw file {@code file}, atomically. Returns the bytes written. */
    public static long write(Path file, MemorySegment data) throws ImageException {
        try (Writer w = create(file)) {
            w.write(data);
            w.commit();
            return data.byteSize();
        }
    }

    /** Reads the whole raw file into {@code dst}, which must be at least as large. Returns the file size. */
    public static long read(Path file, MemorySegment dst) throws ImageException {
        try (Reader r = open(file)) {
            long size = r.size();
            if (dst.byteSize() < size) {
                throw new ImageException(file, size + " bytes do not fit a " + dst.byteSize() + "-byte buffer");
            }
            r.readFully(dst.asSlice(0, size));
            return size;
        }
    }

    /** A raw file being written; invisible at its name until {@link #commit()}. */
    public static final class Writer implements AutoCloseable {
        private final AtomicFile file;
        private long written;

        private Writer(AtomicFile file) {
            this.file = file;
        }

        static Writer create(Path file) throws ImageException {
            return new Writer(AtomicFile.create(file));
        }

        /** Appends all of {@code data} (native or heap memory). */
        public void write(MemorySegment data) throws ImageException {
            for (long off = 0; off < data.byteSize(); off += CHUNK) {
                write(data.asSlice(off, Math.min(CHUNK, data.byteSize() - off)).asByteBuffer());
            }
        }

        /** Appends the remaining bytes of {@code buffer}. */
        public void write(ByteBuffer buffer) throws ImageException {
            file.ensureOpen();
            try {
                while (buffer.hasRemaining()) written += file.channel().write(buffer);
            } catch (IOException e) {
                throw new ImageException(file.target(), "write failed after " + written + " bytes: " + e.getMessage(), e);
            }
        }

        public long written() {
            return written;
        }

        /** fsync (data only), then rename over the target and fsync the directory. */
        public void commit() throws ImageException {
            file.commit(false, false);
        }

        /** Deletes the temporary file unless committed. Never throws. */
        @Override
        public void close() {
            file.close();
        }
    }

    /** A raw file being read sequentially. */
    public static final class Reader implements AutoCloseable {
        private final Path file;
        private final FileChannel channel;
        private final long size;
        private long position;

        private Reader(Path file, FileChannel channel, long size) {
            this.file = file;
            this.channel = channel;
            this.size = size;
        }

        static Reader open(Path file) throws ImageException {
            try {
                FileChannel ch = RegularFiles.openForReading(file);
                return new Reader(file, ch, ch.size());
            } catch (NoSuchFileException e) {
                throw new ImageException(file, "no such raw image file", e);
            } catch (RegularFiles.NotRegularFileException e) {
                throw new ImageException(file, e.getMessage() + "; refused", e);
            } catch (IOException e) {
                throw new ImageException(file, "cannot open: " + e.getMessage(), e);
            }
        }

        public long size() {
            return size;
        }

        public long position() {
            return position;
        }

        /** Fills {@code dst} completely from the current position, or fails if the file ends first. */
        public void readFully(MemorySegment dst) throws ImageException {
            if (dst.byteSize() > size - position) {
                throw new ImageException(file, "wanted " + dst.byteSize() + " bytes at offset " + position
                        + " but the file has " + (size - position) + " left");
            }
            for (long off = 0; off < dst.byteSize(); off += CHUNK) {
                ByteBuffer b = dst.asSlice(off, Math.min(CHUNK, dst.byteSize() - off)).asByteBuffer();
                while (b.hasRemaining()) {
                    if (readInto(b) < 0) {
                        throw new ImageException(file, "file shrank while reading at offset " + position);
                    }
                }
            }
        }

        /** Reads up to {@code dst.remaining()} bytes; returns the count, or -1 at the end of the file. */
        public int readInto(ByteBuffer dst) throws ImageException {
            try {
                int n = channel.read(dst);
                if (n > 0) position += n;
                return n;
            } catch (IOException e) {
                throw new ImageException(file, "read failed at offset " + position + ": " + e.getMessage(), e);
            }
        }

        @Override
        public void close() throws ImageException {
            try {
                channel.close();
            } catch (IOException e) {
                throw new ImageException(file, "cannot close: " + e.getMessage(), e);
            }
        }
    }
}

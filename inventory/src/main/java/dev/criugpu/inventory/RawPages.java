package dev.criugpu.inventory;

import dev.criugpu.api.sys.RegularFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Raw page files (pages-*.img, a plugin's raw GPU memory dumps): bytes with no header, streamed through a
 * {@link FileChannel} straight from and into native memory (direct {@link ByteBuffer}s, e.g. a native segment's
 * {@code asByteBuffer()}), in chunks, so multi-GiB files never pass through the Java heap: a file larger than one
 * buffer (2 GiB) is several {@link Writer#write} or {@link Reader#readFully} calls.
 *
 * <pre>{@code
 * try (RawPages.Writer w = RawPages.create(dir.resolve("cuda-plugin-pages-42.img"))) {
 *     w.write(deviceCopyBuffer);    // any number of times
 *     w.commit();                   // fsync + atomic rename
 * }
 * try (RawPages.Reader r = RawPages.open(file)) {
 *     r.readFully(targetBuffer);    // exactly its remaining bytes, or readInto(...) piecewise
 * }
 * }</pre>
 */
public final class RawPages {
    /** Largest single write/read handed to the kernel; larger buffers are sliced. */
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
    public static long write(Path file, ByteBuffer data) throws ImageException {
        try (Writer w = create(file)) {
            w.write(data);
            w.commit();
            return w.written();
        }
    }

    /**
     * Reads the whole raw file into {@code dst} from its position, which must have that many bytes remaining.
     * Returns the file size.
     */
    public static long read(Path file, ByteBuffer dst) throws ImageException {
        try (Reader r = open(file)) {
            long size = r.size();
            if (dst.remaining() < size) {
                throw new ImageException(file, size + " bytes do not fit a " + dst.remaining() + "-byte buffer");
            }
            r.readFully(dst.slice(dst.position(), (int) size));
            dst.position(dst.position() + (int) size);
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

        /** Appends the remaining bytes of {@code buffer} (native or heap memory), {@link #CHUNK} at a time. */
        public void write(ByteBuffer buffer) throws ImageException {
            file.ensureOpen();
            try {
                while (buffer.hasRemaining()) {
                    int n = Math.min(CHUNK, buffer.remaining());
                    ByteBuffer chunk = buffer.slice(buffer.position(), n);
                    while (chunk.hasRemaining()) written += file.channel().write(chunk);
                    buffer.position(buffer.position() + n);
                }
            } catch (IOException e) {
                throw new ImageException(file.target(), "write failed after " + written + " bytes: " + e.getMessage(), e);
            }
        }

        /** Appends {@code length} bytes of {@code from} starting at {@code offset}, copied by the kernel. */
        public void copyFrom(Reader from, long offset, long length) throws ImageException {
            file.ensureOpen();
            if (offset < 0 || length < 0 || offset + length > from.size) {
                throw new ImageException(from.file, "has no " + length + " bytes at offset " + offset + " (its size is " + from.size + ")");
            }
            try {
                for (long done = 0; done < length; ) {
                    long n = from.channel.transferTo(offset + done, length - done, file.channel());
                    if (n <= 0) throw new IOException("the copy stopped at offset " + (offset + done));
                    done += n;
                    written += n;
                }
            } catch (IOException e) {
                throw new ImageException(file.target(), "copy from " + from.file + " failed: " + e.getMessage(), e);
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

        /** Fills the remaining bytes of {@code dst} from the current position, or fails if the file ends first. */
        public void readFully(ByteBuffer dst) throws ImageException {
            if (dst.remaining() > size - position) {
                throw new ImageException(file, "wanted " + dst.remaining() + " bytes at offset " + position
                        + " but the file has " + (size - position) + " left");
            }
            while (dst.hasRemaining()) {
                int n = Math.min(CHUNK, dst.remaining());
                ByteBuffer b = dst.slice(dst.position(), n);
                while (b.hasRemaining()) {
                    if (readInto(b) < 0) {
                        throw new ImageException(file, "file shrank while reading at offset " + position);
                    }
                }
                dst.position(dst.position() + n);
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

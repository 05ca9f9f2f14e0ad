package dev.criugpu.amdgpu.images;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.sys.RegularFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The framing of every amdgpu plugin file: an 8-byte host-endian length, then that many payload bytes (no criu
 * magic). Small payloads (protobuf messages) are read and written whole here; pages files use
 * {@link PagesFileWriter}/{@link PagesFileReader}.
 */
public final class FramedFile {
    public static final int HEADER_BYTES = 8;
    /** Largest protobuf payload read whole (protobuf messages cannot exceed 2 GiB). */
    static final long MAX_MESSAGE_BYTES = Integer.MAX_VALUE - 8;

    private FramedFile() {
    }

    static ByteBuffer header(long length) {
        return ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.nativeOrder()).putLong(0, length);
    }

    /**
     * Creates (or replaces) {@code dir/name}, mode 0600, holding the framed payload: written under a fresh name and
     * renamed over it, so neither a planted symlink nor a half-written file is ever at the name.
     */
    public static void write(Path dir, String name, byte[] payload) {
        Path temp = null;
        try {
            ImageFiles.Temporary t = ImageFiles.createTemporary(dir, name);
            temp = t.path();
            try (SeekableByteChannel ch = t.channel()) {
                writeFully(ch, header(payload.length));
                writeFully(ch, ByteBuffer.wrap(payload));
            }
            ImageFiles.rename(dir, temp.getFileName().toString(), name);
        } catch (IOException e) {
            deleteQuietly(temp);
            throw new CriuException(Errno.EIO, name + ": cannot write: " + e.getMessage(), e);
        }
    }

    /** Removes a file of ours that a failure left behind; never throws (used on failure paths). */
    public static void deleteQuietly(Path file) {
        try {
            if (file != null) ImageFiles.delete(file.getParent(), file.getFileName().toString());
        } catch (IOException ignored) {
            // the failure being reported matters more; a leftover dot-file is never read
        }
    }

    static void writeFully(SeekableByteChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) ch.write(b);
    }

    /** True when something is at {@code dir/name} (used to tell KFD from render-node files at restore). */
    public static boolean exists(Path dir, String name) {
        return Files.exists(dir.resolve(name), java.nio.file.LinkOption.NOFOLLOW_LINKS);
    }

    /** The payload of {@code dir/name}; fails naming the file if it is missing, truncated or over-long. */
    public static byte[] read(Path dir, String name) {
        Path file = dir.resolve(name);
        try (FileChannel ch = RegularFiles.openForReading(file)) {
            long length = checkedLength(ch, name);
            if (length > MAX_MESSAGE_BYTES) {
                throw new CriuException(Errno.EINVAL, name + ": length header " + length + " is too large for a message");
            }
            ByteBuffer payload = ByteBuffer.allocate((int) length);
            while (payload.hasRemaining()) {
                if (ch.read(payload) < 0) throw new IOException("unexpected end of file");
            }
            return payload.array();
        } catch (IOException e) {
            throw openFailure(name, e, "cannot read: ");
        }
    }

    /** The one line for a file that could not be opened or read: missing, not a regular file, or an I/O error. */
    static CriuException openFailure(String name, IOException e, String otherwise) {
        if (e instanceof NoSuchFileException) {
            return new CriuException(Errno.ENOENT, name + ": no such file in the images directory", e);
        }
        if (e instanceof RegularFiles.NotRegularFileException) {
            return new CriuException(Errno.EINVAL, name + ": " + e.getMessage() + "; refused", e);
        }
        return new CriuException(Errno.EIO, name + ": " + otherwise + e.getMessage(), e);
    }

    /** Reads the length header and checks that exactly that many bytes follow it. */
    static long checkedLength(FileChannel ch, String name) throws IOException {
        long size = ch.size();
        if (size < HEADER_BYTES) {
            throw new CriuException(Errno.EINVAL, name + ": truncated: " + size + " bytes, shorter than the 8-byte length header");
        }
        ByteBuffer h = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.nativeOrder());
        while (h.hasRemaining()) {
            if (ch.read(h, h.position()) < 0) throw new IOException("unexpected end of file");
        }
        long length = h.getLong(0);
        if (length < 0 || length != size - HEADER_BYTES) {
            throw new CriuException(Errno.EINVAL, name + ": length header says " + Long.toUnsignedString(length)
                    + " bytes but " + (size - HEADER_BYTES) + " follow");
        }
        ch.position(HEADER_BYTES);
        return length;
    }
}

package dev.criugpu.inventory;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;

import dev.criugpu.api.sys.RegularFiles;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Reads a CRIU protobuf image one entry at a time: magic header(s), then entries of a 32-bit little-endian
 * length followed by that many bytes of protobuf. Entries of different message types may follow each other
 * (pagemap: one head, then entries), so the parser is given per entry.
 *
 * <p>Only a regular file is read, never through a symlink ({@link RegularFiles}): a link planted in the images dir
 * would otherwise put bytes of a file root can read into the error lines. Every problem (missing file, wrong magic, truncated entry, a length beyond the end of the file, bytes
 * that are not the expected message) is an {@link ImageException} with a one-line message naming the file.
 * Fields this project's .proto files do not declare are kept as unknown fields, so newer images still read.
 *
 * <pre>{@code
 * try (ImageReader r = ImageReader.open(dir.resolve("pstree.img"), ImageIO.PSTREE_MAGIC)) {
 *     for (PstreeEntry e; (e = r.next(PstreeEntry.parser())) != null; ) { ... }
 * }
 * }</pre>
 */
public final class ImageReader implements AutoCloseable {
    private final Path file;
    private final InputStream in;
    private final long size;
    private int imageMagic;
    private long position;
    private int entryIndex;

    private ImageReader(Path file, InputStream in, long size) {
        this.file = file;
        this.in = in;
        this.size = size;
    }

    private static ImageReader open(Path file, int imageMagic, boolean any) throws ImageException {
        if (imageMagic == ImageMagic.RAW) {
            throw new ImageException(file, "raw images have no entries (read them with RawPages)");
        }
        long size;
        InputStream in;
        try {
            FileChannel ch = RegularFiles.openForReading(file);
            size = ch.size();
            in = new BufferedInputStream(Channels.newInputStream(ch), 64 * 1024);
        } catch (NoSuchFileException e) {
            throw new ImageException(file, "no such image file", e);
        } catch (RegularFiles.NotRegularFileException e) {
            throw new ImageException(file, e.getMessage() + "; refused", e);
        } catch (IOException e) {
            throw new ImageException(file, "cannot open: " + e.getMessage(), e);
        }
        ImageReader reader = new ImageReader(file, in, size);
        try {
            if (any) reader.checkAnyHeader();
            else reader.checkHeader(imageMagic);
        } catch (ImageException e) {
            reader.closeQuietly();
            throw e;
        }
        return reader;
    }

    /**
     * Opens any protobuf image: inventory (its magic alone) or common/service magic followed by the image's own
     * magic, which {@link #imageMagic()} then reports.
     */
    public static ImageReader openAny(Path file) throws ImageException {
        return open(file, ImageIO.INVENTORY_MAGIC, true);
    }

    /** Opens {@code file} and checks that it starts with the header of {@code imageMagic}. */
    public static ImageReader open(Path file, int imageMagic) throws ImageException {
        return open(file, imageMagic, false);
    }

    private void checkAnyHeader() throws ImageException {
        if (size == 0) throw new ImageException(file, "empty file, expected a criu image");
        if (size < 4) throw new ImageException(file, "file ends inside the magic header (" + size + " bytes)");
        int first = readInt();
        if (first == ImageIO.INVENTORY_MAGIC) {
            imageMagic = first;
            return;
        }
        if (first != ImageIO.COMMON_MAGIC && first != ImageMagic.SERVICE_MAGIC) {
            throw new ImageException(file, "wrong magic " + ImageMagic.describe(first)
                    + " at offset 0, expected a criu image magic");
        }
        if (size < 8) throw new ImageException(file, "file ends inside the magic header (" + size + " bytes)");
        imageMagic = readInt();
    }

    private void checkHeader(int imageMagic) throws ImageException {
        this.imageMagic = imageMagic;
        if (size == 0) throw new ImageException(file, "empty file, expected a criu image");
        for (int expected : ImageMagic.header(imageMagic)) {
            if (size - position < 4) {
                throw new ImageException(file, "file ends inside the magic header (" + size + " bytes)");
            }
            int found = readInt();
            if (found != expected) {
                throw new ImageException(file, "wrong magic " + ImageMagic.describe(found) + " at offset "
                        + (position - 4) + ", expected " + ImageMagic.describe(expected));
            }
        }
    }

    /**
     * The next entry parsed with {@code parser}, or {@code null} at the end of the file (which must fall
     * exactly on an entry boundary).
     */
    public <M extends MessageLite> M next(Parser<M> parser) throws ImageException {
        byte[] body = nextRaw();
        if (body == null) return null;
        try {
            return parser.parseFrom(body);
        } catch (InvalidProtocolBufferException e) {
            throw new ImageException(file, "entry " + entryIndex + " at offset " + (position - body.length - 4)
                    + " is not a valid " + typeName(parser) + " (" + e.getMessage() + ")", e);
        }
    }

    /** The next entry's protobuf bytes, unparsed, or {@code null} at the end of the file. */
    public byte[] nextRaw() throws ImageException {
        long start = position;
        long remaining = size - position;
        if (remaining == 0) return null;
        if (remaining < 4) {
            throw new ImageException(file, "truncated entry at offset " + start + ": " + remaining
                    + " bytes left, a length needs 4");
        }
        long length = Integer.toUnsignedLong(readInt());
        remaining -= 4;
        if (length > remaining) {
            throw new ImageException(file, "entry " + (entryIndex + 1) + " at offset " + start + " declares "
                    + length + " bytes but only " + remaining + " remain (truncated or corrupt)");
        }
        if (length > Integer.MAX_VALUE - 16) {
            throw new ImageException(file, "entry at offset " + start + " is too large (" + length + " bytes)");
        }
        byte[] body = readFully((int) length);
        entryIndex++;
        return body;
    }

    /** The image's own magic (e.g. {@link ImageIO#PSTREE_MAGIC}). */
    public int imageMagic() {
        return imageMagic;
    }

    public Path file() {
        return file;
    }

    /** Byte offset of the next entry. */
    public long position() {
        return position;
    }

    @Override
    public void close() throws ImageException {
        try {
            in.close();
        } catch (IOException e) {
            throw new ImageException(file, "cannot close: " + e.getMessage(), e);
        }
    }

    private void closeQuietly() {
        try {
            in.close();
        } catch (IOException ignored) {
            // the header error is what matters
        }
    }

    private int readInt() throws ImageException {
        byte[] b = readFully(4);
        return (b[0] & 0xff) | (b[1] & 0xff) << 8 | (b[2] & 0xff) << 16 | (b[3] & 0xff) << 24;
    }

    private byte[] readFully(int n) throws ImageException {
        try {
            byte[] b = in.readNBytes(n);
            if (b.length != n) {
                // The file shrank under us: report it like any other truncation.
                throw new ImageException(file, "file ends at offset " + (position + b.length)
                        + " inside an entry");
            }
            position += n;
            return b;
        } catch (ImageException e) {
            throw e;
        } catch (IOException e) {
            throw new ImageException(file, "read failed at offset " + position + ": " + e.getMessage(), e);
        }
    }

    /** Generated parsers are nested in their message class; its name makes errors readable. */
    private static String typeName(Parser<?> parser) {
        Class<?> outer = parser.getClass().getEnclosingClass();
        return outer != null && MessageLite.class.isAssignableFrom(outer) ? outer.getSimpleName() : "message";
    }
}

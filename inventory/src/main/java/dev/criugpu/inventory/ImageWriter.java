package dev.criugpu.inventory;

import com.google.protobuf.MessageLite;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.file.Path;

/**
 * Writes a CRIU protobuf image atomically: entries go to a temporary file next to the target, and
 * {@link #commit()} fsyncs it, renames it over the target and fsyncs the directory. Closing without
 * committing deletes the temporary file and leaves any existing image untouched.
 *
 * <pre>{@code
 * try (ImageWriter w = ImageWriter.create(dir.resolve("inventory.img"), ImageIO.INVENTORY_MAGIC)) {
 *     w.write(entry);
 *     w.commit();
 * }
 * }</pre>
 *
 * A rewritten image keeps the permissions of the file it replaces; a new one is created 0600.
 */
public final class ImageWriter implements AutoCloseable {
    private final AtomicFile file;
    private final Path target;
    private final OutputStream out;

    private ImageWriter(AtomicFile file) {
        this.file = file;
        this.target = file.target();
        this.out = new BufferedOutputStream(Channels.newOutputStream(file.channel()), 64 * 1024);
    }

    /** Starts a new image of type {@code imageMagic}; nothing is visible at {@code file} until commit. */
    public static ImageWriter create(Path file, int imageMagic) throws ImageException {
        if (imageMagic == ImageMagic.RAW) {
            throw new ImageException(file, "raw images have no entries (write them with RawPages)");
        }
        ImageWriter writer = new ImageWriter(AtomicFile.create(file));
        try {
            for (int magic : ImageMagic.header(imageMagic)) writer.writeInt(magic);
        } catch (ImageException e) {
            writer.close();
            throw e;
        }
        return writer;
    }

    /** Appends one entry: its serialized length (32-bit little-endian), then the message. */
    public void write(MessageLite entry) throws ImageException {
        file.ensureOpen();
        if (!entry.isInitialized()) {
            throw new ImageException(target, "refusing to write an entry with missing required fields");
        }
        byte[] body = entry.toByteArray();
        writeInt(body.length);
        try {
            out.write(body);
        } catch (IOException e) {
            throw new ImageException(target, "write failed: " + e.getMessage(), e);
        }
    }

    /** Makes the image durable and visible at its name, replacing any previous file atomically. */
    public void commit() throws ImageException {
        file.ensureOpen();
        try {
            out.flush();
        } catch (IOException e) {
            close();
            throw new ImageException(target, "cannot commit: " + e.getMessage(), e);
        }
        file.commit(true, true);
    }

    /** Discards the temporary file unless {@link #commit()} succeeded. Never throws. */
    @Override
    public void close() {
        file.close();
    }

    private void writeInt(int v) throws ImageException {
        try {
            out.write(v);
            out.write(v >>> 8);
            out.write(v >>> 16);
            out.write(v >>> 24);
        } catch (IOException e) {
            throw new ImageException(target, "write failed: " + e.getMessage(), e);
        }
    }
}

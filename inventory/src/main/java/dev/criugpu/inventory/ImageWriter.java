package dev.criugpu.inventory;

import com.google.protobuf.MessageLite;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Set;

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
    private final Path target;
    private final Path temp;
    private final FileChannel channel;
    private final OutputStream out;
    private boolean done;

    private ImageWriter(Path target, Path temp, FileChannel channel) {
        this.target = target;
        this.temp = temp;
        this.channel = channel;
        this.out = new BufferedOutputStream(Channels.newOutputStream(channel), 64 * 1024);
    }

    /** Starts a new image of type {@code imageMagic}; nothing is visible at {@code file} until commit. */
    public static ImageWriter create(Path file, int imageMagic) throws ImageException {
        if (imageMagic == ImageMagic.RAW) {
            throw new ImageException(file, "raw images have no entries (write them with RawPages)");
        }
        Path dir = file.toAbsolutePath().getParent();
        Path temp;
        FileChannel channel;
        try {
            temp = Files.createTempFile(dir, "." + file.getFileName() + ".", ".tmp");
            channel = FileChannel.open(temp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
        } catch (IOException e) {
            throw new ImageException(file, "cannot create a temporary file in " + dir + ": " + e.getMessage(), e);
        }
        ImageWriter writer = new ImageWriter(file, temp, channel);
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
        if (done) throw new ImageException(target, "writer already closed");
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
        if (done) throw new ImageException(target, "writer already closed");
        try {
            out.flush();
            channel.force(true);
            channel.close();
            copyPermissions();
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new ImageException(target, "cannot rename atomically in " + temp.getParent(), e);
            }
            done = true;
            syncDirectory(target.toAbsolutePath().getParent());
        } catch (ImageException e) {
            close();
            throw e;
        } catch (IOException e) {
            close();
            throw new ImageException(target, "cannot commit: " + e.getMessage(), e);
        }
    }

    /** Discards the temporary file unless {@link #commit()} succeeded. Never throws. */
    @Override
    public void close() {
        if (done) return;
        done = true;
        try {
            channel.close();
        } catch (IOException ignored) {
            // deleting the temporary file below is what matters
        }
        try {
            Files.deleteIfExists(temp);
        } catch (IOException ignored) {
            // a leftover dot-file is harmless; criu never reads it
        }
    }

    private void copyPermissions() throws IOException {
        if (Files.exists(target)) {
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(target);
            Files.setPosixFilePermissions(temp, perms);
        }
    }

    private static void syncDirectory(Path dir) {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (IOException ignored) {
            // some filesystems refuse fsync on directories; the rename itself is already atomic
        }
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

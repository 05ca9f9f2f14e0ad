package dev.criugpu.inventory;

import dev.criugpu.api.sys.ImageFiles;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Optional;
import java.util.Set;

/**
 * A file written under a temporary dot-name next to its target and made visible only by {@link #commit}: fsync,
 * atomic rename over the target, fsync of the directory. Closing without committing deletes the temporary file
 * and leaves any existing target untouched. The temporary file is created new, 0600, never through a symlink, and
 * the rename replaces whatever is at the target rather than writing through it ({@link ImageFiles}).
 */
final class AtomicFile implements AutoCloseable {
    private final Path target;
    private final Path temp;
    private final FileChannel channel;
    private boolean done;

    private AtomicFile(Path target, Path temp, FileChannel channel) {
        this.target = target;
        this.temp = temp;
        this.channel = channel;
    }

    /** Creates the temporary file for {@code target} in the target's directory; nothing is visible there yet. */
    static AtomicFile create(Path target) throws ImageException {
        Path dir = target.toAbsolutePath().getParent();
        try {
            ImageFiles.Temporary temp = ImageFiles.createTemporary(dir, target.getFileName().toString());
            return new AtomicFile(target, temp.path(), temp.channel());
        } catch (IOException e) {
            throw new ImageException(target, "cannot create a temporary file in " + dir + ": " + e.getMessage(), e);
        }
    }

    Path target() {
        return target;
    }

    /** Where the bytes go until commit. */
    FileChannel channel() {
        return channel;
    }

    /** Fails once the file is committed or closed, as every write after that would. */
    void ensureOpen() throws ImageException {
        if (done) throw new ImageException(target, "writer already closed");
    }

    /**
     * Makes the file durable and visible at its name, replacing any previous file atomically. On failure the
     * temporary file is deleted and the target is left as it was.
     *
     * @param syncMetadata    fsync the file's metadata too (fsync rather than fdatasync)
     * @param keepPermissions give the new file the permissions of the one it replaces, if there is one
     */
    void commit(boolean syncMetadata, boolean keepPermissions) throws ImageException {
        ensureOpen();
        try {
            channel.force(syncMetadata);
            channel.close();
            Path dir = temp.getParent();
            String name = target.getFileName().toString();
            if (keepPermissions) {
                Optional<Set<PosixFilePermission>> was = ImageFiles.permissions(dir, name);
                if (was.isPresent()) ImageFiles.setPermissions(dir, temp.getFileName().toString(), was.get());
            }
            ImageFiles.rename(dir, temp.getFileName().toString(), name);
            done = true;
            ImageFiles.syncDirectory(dir);
        } catch (ImageException e) {
            close();
            throw e;
        } catch (IOException e) {
            close();
            throw new ImageException(target, "cannot commit: " + e.getMessage(), e);
        }
    }

    /** Discards the temporary file unless {@link #commit} succeeded. Never throws. */
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
            ImageFiles.delete(temp.getParent(), temp.getFileName().toString());
        } catch (IOException ignored) {
            // a leftover dot-file is harmless; criu never reads it
        }
    }
}

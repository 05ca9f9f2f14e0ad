package dev.criugpu.amdgpu.images;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.ImageFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * Writes one {@code amdgpu-pages-<id>-<gpu>.img}: the header holds the total announced up front (the sum of the
 * GPU's VRAM/GTT BO sizes), then BO contents are appended in bucket order. The bytes go to a temporary file
 * ({@code <name>.partial}, created new: one a failed dump left is removed first, a symlink never followed) that
 * {@link #close()} renames to the real name only when exactly the total was written; a short write or
 * {@link #abort()} deletes it, so a failed copy never leaves a file that looks complete.
 */
public final class PagesFileWriter implements AutoCloseable {
    private final String name;
    private final Path dir;
    private final String partial;
    private final long total;
    private final FileChannel ch;
    private long written;
    private boolean finished;

    public PagesFileWriter(Path dir, String name, long total) {
        this.name = name;
        this.total = total;
        this.dir = dir;
        this.partial = name + ".partial";
        try {
            ImageFiles.delete(dir, partial);
            this.ch = ImageFiles.createNew(dir, partial);
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, name + ": cannot create: " + e.getMessage(), e);
        }
        try {
            FramedFile.writeFully(ch, FramedFile.header(total));
        } catch (IOException e) {
            abort();
            throw new CriuException(Errno.EIO, name + ": cannot write: " + e.getMessage(), e);
        }
    }

    public String name() {
        return name;
    }

    public void write(ByteBuffer data) {
        int n = data.remaining();
        if (written + n > total) {
            throw new CriuException(Errno.EINVAL, name + ": " + (written + n) + " bytes exceed the announced " + total);
        }
        try {
            FramedFile.writeFully(ch, data);
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, name + ": cannot write: " + e.getMessage(), e);
        }
        written += n;
    }

    public long written() {
        return written;
    }

    /** Drops what was written; never throws (used on failure paths). Closing afterwards does nothing. */
    public void abort() {
        if (finished) return;
        finished = true;
        try {
            ch.close();
        } catch (IOException ignored) {
            // the file is deleted anyway
        }
        try {
            ImageFiles.delete(dir, partial);
        } catch (IOException ignored) {
            // nothing better to do on a failure path; the .partial name never looks complete
        }
    }

    @Override
    public void close() {
        if (finished) return;
        if (written != total) {
            abort();
            throw new CriuException(Errno.EIO, name + ": wrote " + written + " of " + total + " bytes");
        }
        finished = true;
        try {
            ch.close();
            ImageFiles.rename(dir, partial, name);
        } catch (IOException e) {
            try {
                ImageFiles.delete(dir, partial);
            } catch (IOException ignored) {
                // already failing
            }
            throw new CriuException(Errno.EIO, name + ": cannot finish: " + e.getMessage(), e);
        }
    }
}

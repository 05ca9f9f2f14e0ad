package dev.criugpu.amdgpu.images;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * Writes one {@code amdgpu-pages-<id>-<gpu>.img}: the header holds the total announced up front (the sum of the
 * GPU's VRAM/GTT BO sizes), then BO contents are appended in bucket order. {@link #close()} fails if the number
 * of bytes written differs from the total, so a short copy never leaves a file that looks complete.
 */
public final class PagesFileWriter implements AutoCloseable {
    private final String name;
    private final long total;
    private final FileChannel ch;
    private long written;

    public PagesFileWriter(Path dir, String name, long total) {
        this.name = name;
        this.total = total;
        try {
            this.ch = FramedFile.create(dir.resolve(name));
            FramedFile.writeFully(ch, FramedFile.header(total));
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, name + ": cannot create: " + e.getMessage(), e);
        }
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

    @Override
    public void close() {
        try {
            ch.close();
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, name + ": cannot close: " + e.getMessage(), e);
        }
        if (written != total) {
            throw new CriuException(Errno.EIO, name + ": wrote " + written + " of " + total + " bytes");
        }
    }
}

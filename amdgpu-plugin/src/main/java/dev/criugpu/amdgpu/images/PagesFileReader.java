package dev.criugpu.amdgpu.images;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.RegularFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * Reads one {@code amdgpu-pages-<id>-<gpu>.img}. Opening checks that the header equals the expected total (the
 * sum of the GPU's VRAM/GTT BO sizes in the KFD image) and the file's real length, as upstream's restore does; only a
 * regular file is opened, never through a symlink ({@link RegularFiles}).
 */
public final class PagesFileReader implements AutoCloseable {
    private final String name;
    private final FileChannel ch;
    private final long total;

    public PagesFileReader(Path dir, String name, long expectedTotal) {
        this.name = name;
        try {
            this.ch = RegularFiles.openForReading(dir.resolve(name));
        } catch (IOException e) {
            throw FramedFile.openFailure(name, e, "cannot open: ");
        }
        try {
            this.total = FramedFile.checkedLength(ch, name);
        } catch (IOException | RuntimeException e) {
            closeQuietly();
            throw e instanceof CriuException c ? c : new CriuException(Errno.EIO, name + ": " + e.getMessage(), e);
        }
        if (total != expectedTotal) {
            closeQuietly();
            throw new CriuException(Errno.EINVAL, name + ": holds " + total + " bytes but the KFD image's BOs need " + expectedTotal);
        }
    }

    public long total() {
        return total;
    }

    /** Fills {@code into} from payload offset {@code offset}; fails if the payload ends first. */
    public void readFully(long offset, ByteBuffer into) {
        if (offset < 0 || offset + into.remaining() > total) {
            throw new CriuException(Errno.EINVAL, name + ": read of " + into.remaining() + " bytes at " + offset
                    + " is outside the " + total + "-byte payload");
        }
        long pos = FramedFile.HEADER_BYTES + offset;
        try {
            while (into.hasRemaining()) {
                int n = ch.read(into, pos);
                if (n < 0) throw new IOException("unexpected end of file");
                pos += n;
            }
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, name + ": cannot read: " + e.getMessage(), e);
        }
    }

    private void closeQuietly() {
        try {
            ch.close();
        } catch (IOException ignored) {
            // already failing with a better message
        }
    }

    @Override
    public void close() {
        try {
            ch.close();
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, name + ": cannot close: " + e.getMessage(), e);
        }
    }
}

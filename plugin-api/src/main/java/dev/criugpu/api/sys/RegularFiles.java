package dev.criugpu.api.sys;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * Opening an image file for reading as root (DESIGN rule 11): only a regular file is read, never one reached through a
 * symlink. A FIFO named like an image would block the open (and with it criu) until someone writes to it, a device
 * would be opened with its side effects, and a symlink would make root read a file the images dir's owner chose. The
 * name is looked up without following a link, relative to its directory's fd (criu's images-dir fd where
 * {@link ImageFiles#useDirectoryFd} bound it, so a parent directory renamed or a symlink swapped in after criu opened it
 * redirects nothing), as an {@code O_PATH} fd that opens nothing; that fd is checked, and what is read is that very
 * file, reopened through {@code /proc/self/fd}: a name swapped after the check changes nothing
 * ({@link ImageFiles#openForReading}).
 */
public final class RegularFiles {
    static final int S_IFMT = 0170000;
    static final int S_IFREG = 0100000;

    private RegularFiles() {
    }

    /** A file that is not a regular file, or a symlink; the message says which in a few words. */
    public static final class NotRegularFileException extends IOException {
        NotRegularFileException(String reason) {
            super(reason);
        }
    }

    /**
     * {@code file} open for reading.
     *
     * @throws java.nio.file.NoSuchFileException when nothing is there
     * @throws NotRegularFileException  when it is a symlink, FIFO, socket, device or directory
     * @throws IOException              when it cannot be opened otherwise
     */
    public static FileChannel openForReading(Path file) throws IOException {
        Path dir = file.getParent() != null ? file.getParent() : Path.of(".");
        return ImageFiles.openForReading(dir, file.getFileName().toString());
    }

    /** What a non-regular file is, as the one line says it. */
    static String describe(int mode) {
        String kind = switch (mode & S_IFMT) {
            case 0010000 -> "a FIFO";
            case 0020000 -> "a character device";
            case 0040000 -> "a directory";
            case 0060000 -> "a block device";
            case 0120000 -> "a symbolic link";
            case 0140000 -> "a socket";
            default -> String.format("of file type 0%o", mode & S_IFMT);
        };
        return "is " + kind + ", not a regular file";
    }
}

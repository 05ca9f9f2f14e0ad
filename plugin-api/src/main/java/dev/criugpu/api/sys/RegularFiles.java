package dev.criugpu.api.sys;

import dev.criugpu.api.Errno;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Opening an image file for reading as root (DESIGN rule 11): only a regular file is read, never one reached through a
 * symlink. A FIFO named like an image would block the open (and with it criu) until someone writes to it, a device
 * would be opened with its side effects, and a symlink would make root read a file the images dir's owner chose. The
 * name is looked at without following links first (nothing is opened for what already looks wrong); the open itself
 * (O_NOFOLLOW, O_NONBLOCK so that a FIFO swapped in meanwhile cannot block it, O_NOCTTY) is then checked through its fd,
 * and what is read is that very open file, reopened through {@code /proc/self/fd}: a name swapped after the check
 * changes nothing.
 */
public final class RegularFiles {
    private static final int S_IFMT = 0170000;
    private static final int S_IFREG = 0100000;
    private static final int O_NOCTTY = 0x100;

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
     * @throws NoSuchFileException      when nothing is there
     * @throws NotRegularFileException  when it is a symlink, FIFO, socket, device or directory
     * @throws IOException              when it cannot be opened otherwise
     */
    public static FileChannel openForReading(Path file) throws IOException {
        int before = (int) Files.getAttribute(file, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        if ((before & S_IFMT) != S_IFREG) throw new NotRegularFileException(describe(before));
        Syscalls sys = Syscalls.libc();
        int fd;
        try {
            fd = sys.open(file.toString(), Syscalls.O_RDONLY | Syscalls.O_NONBLOCK | Syscalls.O_NOFOLLOW | O_NOCTTY
                    | Syscalls.O_CLOEXEC);
        } catch (SyscallException e) {
            throw switch (e.errno()) {
                case Errno.ENOENT -> new NoSuchFileException(file.toString());
                case Errno.ELOOP -> new NotRegularFileException("is a symbolic link, not a regular file");
                default -> new IOException("open failed: " + Errno.name(e.errno()));
            };
        }
        try {
            int mode = sys.mode(fd);
            if ((mode & S_IFMT) != S_IFREG) throw new NotRegularFileException(describe(mode));
            return FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.READ);
        } catch (SyscallException e) {
            throw new IOException("fstat failed: " + Errno.name(e.errno()));
        } finally {
            sys.close(fd);
        }
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

package dev.criugpu.api.sys;

import dev.criugpu.api.Errno;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;

/**
 * Files the plugins write next to criu's images (DESIGN rule 11). criu runs as root in a directory others may have
 * prepared: a file is only ever created new (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600), so a symlink or file planted
 * under its name makes the creation fail instead of sending root's write elsewhere. A file that replaces another is
 * written under a fresh name and renamed over it: rename replaces a planted symlink, it never follows it.
 * <p>
 * Every call names the directory and a plain file name, and works relative to a directory fd (openat, renameat,
 * unlinkat): for the images directory that is criu's own fd ({@link #useDirectoryFd}), so a path to it that someone
 * changes after criu opened it (a parent directory renamed, a symlink swapped in) cannot send a file elsewhere.
 * Another directory (the command-line tools', the tests') is opened by its name once per call. Image files are read
 * the same way ({@link #openForReading}, which {@link RegularFiles} and so every image reader goes through).
 */
public final class ImageFiles {
    private static final Syscalls SYS = Syscalls.libc();
    private static final int O_PATH = 0x200000;
    private static final Map<Path, Integer> DIRECTORY_FDS = new ConcurrentHashMap<>();

    private ImageFiles() {
    }

    /** From now on the files of {@code dir} are reached through {@code fd} (criu's, which it keeps open). */
    public static void useDirectoryFd(Path dir, int fd) {
        DIRECTORY_FDS.put(dir.toAbsolutePath(), fd);
    }

    /** A directory fd for one call: criu's images dir fd, or {@code dir} opened now and closed by {@link #close}. */
    private record Dir(int fd, boolean owned) implements AutoCloseable {
        static Dir of(Path dir) throws IOException {
            Integer fd = DIRECTORY_FDS.get(dir.toAbsolutePath());
            if (fd != null) return new Dir(fd, false);
            try {
                return new Dir(SYS.open(dir.toString(), Syscalls.O_RDONLY | Syscalls.O_DIRECTORY | Syscalls.O_CLOEXEC), true);
            } catch (SyscallException e) {
                throw ioException(dir.toString(), e);
            }
        }

        @Override
        public void close() {
            if (owned) SYS.close(fd);
        }
    }

    /**
     * The regular file {@code dir/name}, open for reading (DESIGN rule 11): looked up through the directory's fd
     * without following a symlink there, as an {@code O_PATH} fd, so that a FIFO or device under that name is not
     * opened at all; checked through that fd, and read through it ({@code /proc/self/fd}): a name swapped after the
     * check, or a path to the directory changed after criu opened it, changes nothing.
     *
     * @throws NoSuchFileException                     when nothing is there (or no such directory)
     * @throws RegularFiles.NotRegularFileException    when it is a symlink, FIFO, socket, device or directory
     * @throws IOException                             when it cannot be opened otherwise
     */
    public static FileChannel openForReading(Path dir, String name) throws IOException {
        checkName(name);
        Dir d;
        try {
            d = Dir.of(dir);
        } catch (IOException e) {
            if (e.getCause() instanceof SyscallException x && x.errno() == Errno.ENOENT) {
                throw new NoSuchFileException(dir.resolve(name).toString());
            }
            throw e;
        }
        try (d) {
            int fd;
            try {
                fd = SYS.openat(d.fd, name, O_PATH | Syscalls.O_NOFOLLOW | Syscalls.O_CLOEXEC, 0);
            } catch (SyscallException e) {
                if (e.errno() == Errno.ENOENT) throw new NoSuchFileException(dir.resolve(name).toString());
                throw new IOException("open failed: " + Errno.name(e.errno()), e);
            }
            try {
                int mode = SYS.mode(fd);
                if ((mode & RegularFiles.S_IFMT) != RegularFiles.S_IFREG) {
                    throw new RegularFiles.NotRegularFileException(RegularFiles.describe(mode));
                }
                return FileChannel.open(viaFd(fd), StandardOpenOption.READ);
            } catch (SyscallException e) {
                throw new IOException("fstat failed: " + Errno.name(e.errno()), e);
            } finally {
                SYS.close(fd);
            }
        }
    }

    /** Whether anything (a symlink included, not followed) is named {@code name} in {@code dir}. */
    public static boolean exists(Path dir, String name) throws IOException {
        checkName(name);
        try (Dir d = Dir.of(dir)) {
            SYS.close(SYS.openat(d.fd, name, O_PATH | Syscalls.O_NOFOLLOW | Syscalls.O_CLOEXEC, 0));
            return true;
        } catch (SyscallException e) {
            if (e.errno() == Errno.ENOENT) return false;
            throw ioException(dir.resolve(name).toString(), e);
        }
    }

    /** The names of the entries of {@code dir} (sorted), listed through the directory's fd. */
    public static List<String> list(Path dir) throws IOException {
        try (Dir d = Dir.of(dir); Stream<Path> entries = Files.list(viaFd(d.fd))) {
            return entries.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** A new file {@code name} in {@code dir}, open for writing; fails if anything, a symlink included, is there. */
    public static FileChannel createNew(Path dir, String name) throws IOException {
        checkName(name);
        try (Dir d = Dir.of(dir)) {
            int fd = SYS.openat(d.fd, name, Syscalls.O_WRONLY | Syscalls.O_CREAT | Syscalls.O_EXCL
                    | Syscalls.O_NOFOLLOW | Syscalls.O_CLOEXEC, 0600);
            try {
                return FileChannel.open(viaFd(fd), StandardOpenOption.WRITE);
            } finally {
                SYS.close(fd);
            }
        } catch (SyscallException e) {
            throw ioException(dir.resolve(name).toString(), e);
        }
    }

    /** The same, as a raw fd (close-on-exec) the caller closes: one to hand to another process. */
    public static int createNewFd(Path dir, String name) throws IOException {
        checkName(name);
        try (Dir d = Dir.of(dir)) {
            return SYS.openat(d.fd, name, Syscalls.O_WRONLY | Syscalls.O_CREAT | Syscalls.O_EXCL
                    | Syscalls.O_NOFOLLOW | Syscalls.O_CLOEXEC, 0600);
        } catch (SyscallException e) {
            throw ioException(dir.resolve(name).toString(), e);
        }
    }

    /**
     * The JDK opens channels only by name: /proc/self/fd/N names the file this process holds open as fd N (the
     * kernel follows the fd, not a path), so the channel is on the file just created, whatever its name means now.
     */
    private static Path viaFd(int fd) {
        return Path.of("/proc/self/fd/" + fd);
    }

    /** A new file under a fresh name next to {@code dir/name} ({@code .name.<random>.tmp}), to be renamed over it. */
    public static Temporary createTemporary(Path dir, String name) throws IOException {
        for (int attempt = 0; ; attempt++) {
            String temp = "." + name + "." + Long.toHexString(ThreadLocalRandom.current().nextLong()) + ".tmp";
            try {
                return new Temporary(dir.resolve(temp), createNew(dir, temp));
            } catch (FileAlreadyExistsException e) {
                if (attempt == 100) throw e;
            }
        }
    }

    /** Renames {@code dir/from} to {@code dir/to}, replacing what is there (a symlink there is replaced, not followed). */
    public static void rename(Path dir, String from, String to) throws IOException {
        checkName(from);
        checkName(to);
        try (Dir d = Dir.of(dir)) {
            SYS.renameat(d.fd, from, to);
        } catch (SyscallException e) {
            throw ioException(dir.resolve(from).toString(), e);
        }
    }

    /** Removes {@code dir/name} (a symlink there, not its target); false when there was nothing of that name. */
    public static boolean delete(Path dir, String name) throws IOException {
        checkName(name);
        try (Dir d = Dir.of(dir)) {
            return SYS.unlinkat(d.fd, name);
        } catch (SyscallException e) {
            throw ioException(dir.resolve(name).toString(), e);
        }
    }

    /** The permissions of the regular file {@code dir/name}; empty when there is none (a symlink is none). */
    public static Optional<Set<PosixFilePermission>> permissions(Path dir, String name) throws IOException {
        checkName(name);
        try (Dir d = Dir.of(dir)) {
            int fd = SYS.openat(d.fd, name, O_PATH | Syscalls.O_NOFOLLOW | Syscalls.O_CLOEXEC, 0);
            try {
                Syscalls.FileStat st = SYS.fileStat(fd);
                return st.isRegularFile() ? Optional.of(Files.getPosixFilePermissions(viaFd(fd))) : Optional.empty();
            } finally {
                SYS.close(fd);
            }
        } catch (SyscallException e) {
            if (e.errno() == Errno.ENOENT) return Optional.empty();
            throw ioException(dir.resolve(name).toString(), e);
        }
    }

    /** Sets the permissions of the regular file {@code dir/name}, never those of what a symlink there points to. */
    public static void setPermissions(Path dir, String name, Set<PosixFilePermission> permissions) throws IOException {
        checkName(name);
        try (Dir d = Dir.of(dir)) {
            int fd = SYS.openat(d.fd, name, O_PATH | Syscalls.O_NOFOLLOW | Syscalls.O_CLOEXEC, 0);
            try {
                if (!SYS.fileStat(fd).isRegularFile()) throw new IOException(dir.resolve(name) + ": not a regular file");
                Files.setPosixFilePermissions(viaFd(fd), permissions);
            } finally {
                SYS.close(fd);
            }
        } catch (SyscallException e) {
            throw ioException(dir.resolve(name).toString(), e);
        }
    }

    /** fsync of the directory itself, after a rename; quietly nothing where the filesystem refuses it. */
    public static void syncDirectory(Path dir) {
        try (Dir d = Dir.of(dir); FileChannel ch = FileChannel.open(viaFd(d.fd), StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException | SyscallException ignored) {
            // some filesystems refuse fsync on directories; the rename itself is already atomic
        }
    }

    private static void checkName(String name) {
        if (name.isEmpty() || name.contains("/") || name.equals(".") || name.equals("..")) {
            throw new IllegalArgumentException("not a file name: " + name);
        }
    }

    private static IOException ioException(String file, SyscallException e) {
        return e.errno() == Errno.EEXIST ? new FileAlreadyExistsException(file)
                : new IOException(file + ": " + Errno.name(e.errno()), e);
    }

    /** A file created by {@link #createTemporary}: where it is, and the channel to write it through. */
    public record Temporary(Path path, FileChannel channel) {
    }
}

package dev.criugpu.api.sys;

import dev.criugpu.api.Errno;
import dev.criugpu.api.Printable;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalInt;

/**
 * One line to a restored task's own stderr (its fd 2), where its user reads its output: a container's log, a
 * terminal, a file, the journal. Callers of criu keep criu's log only while it suits them (containerd deletes a failed
 * restore's task directory, restore.log with it, and runc reports only "criu failed: type RESTORE errno 0"), and runc
 * hands the container's stdio to criu as inherited files, not as criu's own stderr; the task's fd 2 is where the
 * kubelet, podman, systemd and a shell look.
 *
 * <p>Root writes only what the task itself could, and opens nothing of the task's before it knows what it is: opening
 * a device or a FIFO has effects of its own (a new pseudo-terminal from /dev/ptmx, a tape rewound, a GPU initialised),
 * and a reopen through /proc is checked against root's rights, not the task's. So the task's own open file is taken
 * ({@code pidfd_getfd}), with the task's access mode, and written to only if it is open for writing and is a regular
 * file (at the task's own offset, as its next write would be), a pipe or FIFO, a socket, or a terminal, without
 * waiting: a pipe or terminal through a non-blocking open of the file now in hand (the task's open file is shared,
 * and its flags are the task's to set), a socket with MSG_DONTWAIT.
 */
public final class TaskStderr {
    private static final int STDERR = 2;
    private static final int O_ACCMODE = 3;
    private static final int S_IFIFO = 0010000;
    private static final int S_IFCHR = 0020000;
    private static final int S_IFSOCK = 0140000;

    /** What a task's stderr is, as far as writing a line to it goes. */
    enum Kind {
        FILE, PIPE, TERMINAL, SOCKET, OTHER
    }

    private TaskStderr() {
    }

    /**
     * Writes {@code line} (escaped: {@link Printable}) and a newline to {@code pid}'s fd 2; says what became of it, for
     * criu's log: "said so on its stderr (pipe:[123])", or why not.
     */
    public static String tell(int pid, String line) {
        Syscalls sys = Syscalls.libc();
        String target = target(pid);
        int fd;
        try {
            int pidfd = sys.pidfdOpen(pid);
            try {
                fd = sys.pidfdGetfd(pidfd, STDERR);
            } finally {
                sys.close(pidfd);
            }
        } catch (SyscallException e) {
            if (e.errno() == Errno.ESRCH || e.errno() == Errno.EBADF) return "it has no stderr to say so on";
            return "cannot take its stderr (" + target + "): " + e.getMessage();
        }
        try {
            return write(sys, fd, target, (Printable.of(line) + "\n").getBytes(StandardCharsets.UTF_8));
        } finally {
            sys.close(fd);
        }
    }

    /** {@code bytes} to {@code fd}, this process's copy of the task's stderr ({@code target}, for the words). */
    private static String write(Syscalls sys, int fd, String target, byte[] bytes) {
        int access = fdFlags(Path.of("/proc/self/fdinfo/" + fd)).orElse(Syscalls.O_RDONLY) & O_ACCMODE;
        if (access != Syscalls.O_WRONLY && access != Syscalls.O_RDWR) return "its stderr (" + target + ") is not open for writing";
        long n;
        try {
            n = switch (kind(sys.fileStat(fd).mode(), sys.rdev(fd))) {
                case FILE -> sys.write(fd, bytes);
                case SOCKET -> Sockets.sendNow(fd, bytes);
                case PIPE, TERMINAL -> {
                    int nonBlocking = sys.open("/proc/self/fd/" + fd, Syscalls.O_WRONLY | Syscalls.O_NONBLOCK
                            | Syscalls.O_NOCTTY | Syscalls.O_CLOEXEC); // ENXIO: a FIFO nobody reads
                    try {
                        yield sys.write(nonBlocking, bytes);
                    } finally {
                        sys.close(nonBlocking);
                    }
                }
                case OTHER -> -1;
            };
        } catch (SyscallException e) {
            return "cannot write to its stderr (" + target + "): " + e.getMessage(); // a full pipe, a hung-up terminal
        }
        if (n < 0) return "its stderr (" + target + ") is no file, pipe, socket or terminal";
        return n == bytes.length ? "said so on its stderr (" + target + ")" : "its stderr (" + target + ") took " + n + " bytes";
    }

    /** What fd 2 of {@code pid} names, for the words only ("pipe:[123]", "/var/log/job.log"). */
    private static String target(int pid) {
        try {
            return Printable.of(Files.readSymbolicLink(Path.of("/proc/" + pid + "/fd/" + STDERR)).toString());
        } catch (IOException e) {
            return "gone";
        }
    }

    /**
     * A regular file, a pipe or FIFO, a socket, a terminal (a pseudo-terminal's slave side, a virtual console,
     * /dev/console), or something else.
     */
    static Kind kind(int mode, long rdev) {
        int type = mode & Syscalls.S_IFMT;
        if (type == Syscalls.S_IFREG) return Kind.FILE;
        if (type == S_IFIFO) return Kind.PIPE;
        if (type == S_IFSOCK) return Kind.SOCKET;
        if (type != S_IFCHR) return Kind.OTHER;
        long major = (rdev >> 8) & 0xfff;
        long minor = (rdev & 0xff) | ((rdev >> 12) & 0xfff00);
        return (major >= 136 && major <= 143) || major == 4 || (major == 5 && minor == 1) ? Kind.TERMINAL : Kind.OTHER;
    }

    /** The {@code flags:} line of an fdinfo file (octal), or empty. */
    static OptionalInt fdFlags(Path fdinfo) {
        try {
            for (String l : Files.readAllLines(fdinfo)) {
                if (l.startsWith("flags:")) return OptionalInt.of(Integer.parseInt(l.substring(6).trim(), 8));
            }
        } catch (IOException | NumberFormatException e) {
            // gone, or not what the kernel writes
        }
        return OptionalInt.empty();
    }
}

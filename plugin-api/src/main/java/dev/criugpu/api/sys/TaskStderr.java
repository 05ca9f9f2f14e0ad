package dev.criugpu.api.sys;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalInt;

/**
 * One line to a restored task's own stderr (its fd 2), where its user reads its output: a container's log, a
 * terminal, a file. Callers of criu keep criu's log only while it suits them (containerd deletes a failed restore's
 * task directory, restore.log with it, and runc reports only "criu failed: type RESTORE errno 0"), and runc hands the
 * container's stdio to criu as inherited files, not as criu's own stderr; the task's fd 2 is where the kubelet, podman
 * and a shell look. Root reopens the file through /proc, so only what the task itself could write to is written:
 * fd 2 open for writing, and a pipe or FIFO, a terminal or a regular file (appended to); never blocking.
 */
public final class TaskStderr {
    private static final int O_ACCMODE = 3;
    private static final int S_IFIFO = 0010000;
    private static final int S_IFCHR = 0020000;

    private TaskStderr() {
    }

    /**
     * Writes {@code line} and a newline to {@code pid}'s fd 2; says what became of it, for criu's log: "said so on its
     * stderr (pipe:[123])", or why not.
     */
    public static String tell(int pid, String line) {
        Path proc = Path.of("/proc/" + pid);
        String target;
        try {
            target = Files.readSymbolicLink(proc.resolve("fd/2")).toString();
        } catch (IOException e) {
            return "it has no stderr to say so on";
        }
        OptionalInt flags = fdFlags(proc.resolve("fdinfo/2"));
        int access = flags.orElse(Syscalls.O_RDONLY) & O_ACCMODE;
        if (access != Syscalls.O_WRONLY && access != Syscalls.O_RDWR) return "its stderr (" + target + ") is not open for writing";
        Syscalls sys = Syscalls.libc();
        int fd;
        try {
            fd = sys.open(proc.resolve("fd/2").toString(), Syscalls.O_WRONLY | Syscalls.O_APPEND | Syscalls.O_NONBLOCK
                    | Syscalls.O_NOCTTY | Syscalls.O_CLOEXEC);
        } catch (SyscallException e) {
            return "cannot open its stderr (" + target + "): " + e.getMessage(); // a socket, a FIFO nobody reads
        }
        try {
            if (!writable(sys.fileStat(fd).mode(), sys.rdev(fd))) return "its stderr (" + target + ") is no pipe, terminal or file";
            byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
            long n = sys.write(fd, bytes);
            return n == bytes.length ? "said so on its stderr (" + target + ")" : "its stderr (" + target + ") took " + n + " bytes";
        } catch (SyscallException e) {
            return "cannot write to its stderr (" + target + "): " + e.getMessage(); // a full pipe, a hung-up terminal
        } finally {
            sys.close(fd);
        }
    }

    /** A pipe or FIFO, a regular file, or a terminal (a pseudo-terminal, a virtual console, /dev/console). */
    static boolean writable(int mode, long rdev) {
        int type = mode & Syscalls.S_IFMT;
        if (type == S_IFIFO || type == Syscalls.S_IFREG) return true;
        if (type != S_IFCHR) return false;
        long major = (rdev >> 8) & 0xfff;
        long minor = (rdev & 0xff) | ((rdev >> 12) & 0xfff00);
        return (major >= 136 && major <= 143) || major == 4 || (major == 5 && minor == 1);
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

package dev.criugpu.api.sys;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;

/**
 * Whether a file is safe for criu, running as root, to execute or load (DESIGN rule 11): the rules the shim applies
 * to what it hands the JVM (native/src/shim_trust.c, open_trusted). The path is walked as given, one component at
 * a time: / and every directory, every symlink on the way (and, walked the same way, its target) and the regular file
 * at the end must belong to root (or to the user criu runs as) and be writable by no one else; a root-owned sticky
 * directory (/tmp) is fine, since only root can replace what root put there. Once that holds, no one else can change
 * what the path leads to, so a program started by that path later (the CUDA agent's java) runs the file checked.
 */
public final class TrustedPaths {
    private static final int S_IWGRP = 0020;
    private static final int S_IWOTH = 0002;
    private static final int S_ISVTX = 01000;
    private static final int MAX_LINKS = 40;
    /** criu's effective uid: read, not asked through FFM, so that a check costs no linking (issue 23). */
    private static final int EUID = effectiveUid();

    private TrustedPaths() {
    }

    /** The file's real path (absolute, symlink-free) once it is checked; fails with one line naming it and why. */
    public static Path requireSafeToLoad(Path file) {
        return walk(file).real;
    }

    /**
     * The file, checked and opened for reading: the channel is on the file that was walked (its fd is compared with
     * the walk's last component), so a file put at that name afterwards is not the one read.
     */
    public static FileChannel openSafeToLoad(Path file) {
        Walked w = walk(file);
        Syscalls sys = Syscalls.libc();
        int fd;
        try {
            fd = sys.open(w.real.toString(), Syscalls.O_RDONLY | Syscalls.O_NOFOLLOW | Syscalls.O_NONBLOCK
                    | Syscalls.O_CLOEXEC);
        } catch (SyscallException e) {
            throw new CriuException(e.errno(), "refusing " + file + ": " + w.real + ": " + Errno.name(e.errno()));
        }
        try {
            Syscalls.FileStat st = sys.fileStat(fd);
            if (st.dev() != w.dev || st.ino() != w.ino || !st.isRegularFile() || untrusted(st.uid(), st.mode()) != null) {
                throw new CriuException(Errno.EPERM, "refusing " + file + ": " + w.real + " changed while it was checked");
            }
            // the JDK opens channels only by name: /proc/self/fd/N is the file open as fd N, not a path looked up again
            return FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.READ);
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, "refusing " + file + ": " + e.getMessage());
        } finally {
            sys.close(fd);
        }
    }

    /** Where a walk ended: the real path and the identity of the regular file there. */
    private record Walked(Path real, long dev, long ino) {
    }

    private static Walked walk(Path file) {
        if (!file.isAbsolute()) throw new CriuException(Errno.EINVAL, "refusing " + file + ": not an absolute path");
        Path real = file.getRoot();
        Map<String, Object> attrs = attributes(file, real);
        refuseIfUntrusted(file, real, attrs);
        StringBuilder todo = new StringBuilder(file.toString());
        int links = 0;
        while (true) {
            int start = 0;
            while (start < todo.length() && todo.charAt(start) == '/') start++;
            if (start == todo.length()) break;
            int end = todo.indexOf("/", start);
            if (end < 0) end = todo.length();
            String name = todo.substring(start, end);
            todo.delete(0, end);
            if (name.equals(".")) continue;
            if (name.equals("..")) {
                if (real.getParent() != null) real = real.getParent();
                attrs = attributes(file, real);
                continue;
            }
            Path next = real.resolve(name);
            attrs = attributes(file, next);
            refuseIfUntrusted(file, next, attrs);
            if (!(boolean) attrs.get("isSymbolicLink")) {
                real = next;
                continue;
            }
            if (++links > MAX_LINKS) {
                throw new CriuException(Errno.ELOOP, "refusing " + file + ": " + next + ": too many levels of symbolic links");
            }
            try {
                todo.insert(0, Files.readSymbolicLink(next).toString());
            } catch (IOException e) {
                throw new CriuException(Errno.EIO, "refusing " + file + ": " + next + ": " + e.getMessage());
            }
            if (todo.charAt(0) == '/') real = real.getRoot();
        }
        if (!(boolean) attrs.get("isRegularFile")) refuse(file, real, attrs, "not a regular file");
        return new Walked(real, ((Number) attrs.get("dev")).longValue(), ((Number) attrs.get("ino")).longValue());
    }

    private static Map<String, Object> attributes(Path file, Path p) {
        try {
            return Files.readAttributes(p, "unix:uid,mode,dev,ino,isSymbolicLink,isRegularFile", LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            throw new CriuException(Errno.ENOENT, "refusing " + file + ": " + p + ": " + e.getMessage());
        }
    }

    private static void refuseIfUntrusted(Path file, Path p, Map<String, Object> attrs) {
        String bad = untrusted((int) attrs.get("uid"), (int) attrs.get("mode"));
        if (bad != null) refuse(file, p, attrs, bad);
    }

    private static void refuse(Path file, Path p, Map<String, Object> attrs, String bad) {
        throw new CriuException(Errno.EPERM, String.format("refusing %s: %s is %s (owner uid %d, mode %04o); what the "
                + "plugins load, and every directory and symlink on the way to it, must be writable by root only",
                file, p, bad, (int) attrs.get("uid"), (int) attrs.get("mode") & 07777));
    }

    /** The second field of the Uid: line of /proc/self/status; root's 0 where it cannot be read (trusting less). */
    private static int effectiveUid() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) return Integer.parseInt(line.substring(4).trim().split("\\s+")[1]);
            }
        } catch (IOException | RuntimeException e) {
            // fall through
        }
        return 0;
    }

    /** Why a file of this owner and st_mode is not trusted, or null. */
    private static String untrusted(int uid, int mode) {
        boolean link = (mode & Syscalls.S_IFMT) == 0120000;
        boolean sticky = (mode & Syscalls.S_IFMT) == Syscalls.S_IFDIR && (mode & S_ISVTX) != 0 && uid == 0;
        return uid != 0 && uid != EUID ? "owned by another user"
                : link ? null
                : (mode & S_IWOTH) != 0 && !sticky ? "writable by everyone"
                : (mode & S_IWGRP) != 0 && !sticky ? "writable by its group" : null;
    }
}

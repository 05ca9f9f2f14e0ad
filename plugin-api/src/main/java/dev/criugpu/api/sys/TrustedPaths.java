package dev.criugpu.api.sys;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.bindings.libc_h;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Whether a file is safe for criu, running as root, to execute or load (DESIGN rule 11): the rules the shim
 * applies to what it hands the JVM (native/src/criu_gpu_shim.c, check_trusted). The file, symlinks resolved, must be
 * a regular file, and it and every directory above it owned by root (or by the user criu runs as) and writable by
 * no one else; a root-owned sticky directory (/tmp) above it is fine, since only root can replace what root put
 * there.
 */
public final class TrustedPaths {
    private static final int S_IWGRP = 0020;
    private static final int S_IWOTH = 0002;
    private static final int S_ISVTX = 01000;

    private TrustedPaths() {
    }

    /** The file's real (absolute, symlink-free) path; fails with one line naming the file and the reason. */
    public static Path requireSafeToLoad(Path file) {
        Path real;
        try {
            real = file.toRealPath();
        } catch (IOException e) {
            throw new CriuException(Errno.ENOENT, "refusing " + file + ": " + e.getMessage());
        }
        problem(real).ifPresent(why -> {
            throw new CriuException(Errno.EPERM, "refusing " + file + ": " + why
                    + "; what the plugins load, and every directory above it, must be writable by root only");
        });
        return real;
    }

    /** Why {@code real} (a real path) is not safe, or empty. */
    static Optional<String> problem(Path real) {
        int euid = libc_h.geteuid();
        boolean file = true;
        for (Path p = real; p != null; p = p.getParent(), file = false) {
            int uid;
            int mode;
            try {
                uid = (int) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS);
                mode = (int) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
            } catch (IOException e) {
                return Optional.of(p + ": " + e.getMessage());
            }
            boolean sticky = !file && (mode & S_ISVTX) != 0 && uid == 0;
            String bad = file && !Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) ? "not a regular file"
                    : uid != 0 && uid != euid ? "owned by another user"
                    : (mode & S_IWOTH) != 0 && !sticky ? "writable by everyone"
                    : (mode & S_IWGRP) != 0 && !sticky ? "writable by its group" : null;
            if (bad != null) {
                return Optional.of(String.format("%s is %s (owner uid %d, mode %04o)", p, bad, uid, mode & 07777));
            }
        }
        return Optional.empty();
    }
}

package dev.criugpu.api.sys;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Files the plugins write next to criu's images (DESIGN rule 11). criu runs as root in a directory others may have
 * prepared: a file is only ever created new (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600), so a symlink or file planted
 * under its name makes the creation fail instead of sending root's write elsewhere. A file that replaces another is
 * written under a fresh name and renamed over it: rename replaces a planted symlink, it never follows it.
 */
public final class ImageFiles {

    private ImageFiles() {
    }

    /** A new file {@code name} in {@code dir}, open for writing; fails if anything, a symlink included, is there. */
    public static FileChannel createNew(Path dir, String name) throws IOException {
        if (name.isEmpty() || name.contains("/") || name.equals(".") || name.equals("..")) {
            throw new IllegalArgumentException("not a file name: " + name);
        }
        Path file = dir.resolve(name);
        return FileChannel.open(file, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
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

    /** A file created by {@link #createTemporary}: where it is, and the channel to write it through. */
    public record Temporary(Path path, FileChannel channel) {
    }
}

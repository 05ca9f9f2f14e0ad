package dev.criugpu.api.sys;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.bindings.libc_h;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The files of a plugin dir as an installer leaves them, and as a careless one does. */
class TrustedPathsTest {
    @TempDir
    Path tmp;
    private Path dir;
    private Path tool;

    @BeforeEach
    void installedTool() throws Exception {
        // the temp dir's parents (/tmp: root's, sticky) are what the test machine has; below it, a dir we own
        dir = Files.createDirectory(tmp.resolve("bin"), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwxr-xr-x")));
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
        tool = Files.writeString(dir.resolve("cuda-checkpoint"), "#!/bin/sh\n");
        Files.setPosixFilePermissions(tool, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    @Test
    void aFileOnlyItsOwnerCanWriteInDirsOnlyTheOwnerCanWriteIsSafe() {
        assertEquals(tool, TrustedPaths.requireSafeToLoad(tool));
    }

    @Test
    void aGroupWritableFileIsRefusedWithOneLineNamingIt() throws Exception {
        Files.setPosixFilePermissions(tool, PosixFilePermissions.fromString("rwxrwxr-x"));
        CriuException e = assertThrows(CriuException.class, () -> TrustedPaths.requireSafeToLoad(tool));
        assertEquals("refusing " + tool + ": " + tool + " is writable by its group (owner uid " + libc_h.geteuid()
                + ", mode 0775); what the plugins load, and every directory and symlink on the way to it, must be writable by "
                + "root only",
                e.getMessage());
    }

    @Test
    void aWorldWritableDirectoryAboveIsRefused() throws Exception {
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        CriuException e = assertThrows(CriuException.class, () -> TrustedPaths.requireSafeToLoad(tool));
        assertTrue(e.getMessage().startsWith("refusing " + tool + ": " + dir + " is writable by everyone"),
                e.getMessage());
    }

    @Test
    void aStickyDirectoryIsFineOnlyWhenRootOwnsIt() throws Exception {
        // Java cannot set the sticky bit
        assertEquals(0, new ProcessBuilder("chmod", "1777", dir.toString()).inheritIO().start().waitFor());
        if (libc_h.geteuid() == 0) {
            assertEquals(tool, TrustedPaths.requireSafeToLoad(tool));
        } else {
            assertThrows(CriuException.class, () -> TrustedPaths.requireSafeToLoad(tool));
        }
    }

    @Test
    void aSymlinkIsJudgedByItsTarget() throws Exception {
        Path link = Files.createSymbolicLink(tmp.resolve("link"), tool);
        assertEquals(tool, TrustedPaths.requireSafeToLoad(link));
        Files.setPosixFilePermissions(tool, PosixFilePermissions.fromString("rwxr-xrwx"));
        CriuException e = assertThrows(CriuException.class, () -> TrustedPaths.requireSafeToLoad(link));
        assertTrue(e.getMessage().startsWith("refusing " + link + ": " + tool + " is writable by everyone"),
                e.getMessage());
    }

    @Test
    void aSymlinkedDirectoryAnotherUserOwnsIsRefusedThoughWhereItLeadsIsFine() throws Exception {
        assumeTrue(libc_h.geteuid() == 0, "needs root to give files away");
        Path theirs = Files.createDirectory(tmp.resolve("theirs"));
        Files.setAttribute(theirs, "unix:uid", 1000);
        Files.createSymbolicLink(theirs.resolve("bin"), dir);
        CriuException e = assertThrows(CriuException.class,
                () -> TrustedPaths.requireSafeToLoad(theirs.resolve("bin/cuda-checkpoint")));
        assertTrue(e.getMessage().startsWith("refusing " + theirs.resolve("bin/cuda-checkpoint") + ": " + theirs
                + " is owned by another user (owner uid 1000, "), e.getMessage());

        Path link = Files.createSymbolicLink(tmp.resolve("their-link"), dir);
        Files.setAttribute(link, "unix:uid", 1000, LinkOption.NOFOLLOW_LINKS);
        e = assertThrows(CriuException.class, () -> TrustedPaths.requireSafeToLoad(link.resolve("cuda-checkpoint")));
        assertTrue(e.getMessage().startsWith("refusing " + link.resolve("cuda-checkpoint") + ": " + link
                + " is owned by another user (owner uid 1000, "), e.getMessage());
    }

    @Test
    void relativeSymlinksAndDotDotAreWalkedAsTheKernelWould() throws Exception {
        Files.createDirectory(tmp.resolve("jdk"));
        Files.createSymbolicLink(tmp.resolve("jdk/tools"), Path.of("../bin"));
        assertEquals(tool, TrustedPaths.requireSafeToLoad(tmp.resolve("jdk/tools/./cuda-checkpoint")));
        assertEquals(tool, TrustedPaths.requireSafeToLoad(tmp.resolve("jdk/../bin/cuda-checkpoint")));
        Files.createSymbolicLink(tmp.resolve("loop"), tmp.resolve("loop"));
        assertTrue(assertThrows(CriuException.class, () -> TrustedPaths.requireSafeToLoad(tmp.resolve("loop")))
                .getMessage().endsWith("too many levels of symbolic links"));
    }

    @Test
    void aFileReplacedAfterTheCheckIsNotTheOneRead() throws Exception {
        try (FileChannel checked = TrustedPaths.openSafeToLoad(tool)) {
            Path swapped = Files.writeString(dir.resolve("swapped"), "#!/bin/sh\nrm -rf /\n");
            Files.move(swapped, tool, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            ByteBuffer read = ByteBuffer.allocate(64);
            checked.read(read);
            assertEquals("#!/bin/sh\n", new String(read.array(), 0, read.position(), StandardCharsets.UTF_8));
        }
    }

    @Test
    void aRelativePathIsRefused() {
        assertEquals("refusing bin/cuda-checkpoint: not an absolute path", assertThrows(CriuException.class,
                () -> TrustedPaths.requireSafeToLoad(Path.of("bin/cuda-checkpoint"))).getMessage());
    }

    @Test
    void aDirectoryOrAMissingFileIsRefused() {
        assertTrue(assertThrows(CriuException.class, () -> TrustedPaths.requireSafeToLoad(dir)).getMessage()
                .contains(" is not a regular file"));
        assertTrue(assertThrows(CriuException.class, () -> TrustedPaths.requireSafeToLoad(dir.resolve("none")))
                .getMessage().startsWith("refusing " + dir.resolve("none") + ": "));
    }
}

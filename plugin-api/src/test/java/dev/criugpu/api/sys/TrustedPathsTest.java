package dev.criugpu.api.sys;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.bindings.libc_h;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
                + ", mode 0775); what the plugins load, and every directory above it, must be writable by root only",
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
    void aDirectoryOrAMissingFileIsRefused() {
        assertTrue(assertThrows(CriuException.class, () -> TrustedPaths.requireSafeToLoad(dir)).getMessage()
                .contains(" is not a regular file"));
        assertTrue(assertThrows(CriuException.class, () -> TrustedPaths.requireSafeToLoad(dir.resolve("none")))
                .getMessage().startsWith("refusing " + dir.resolve("none") + ": "));
    }
}

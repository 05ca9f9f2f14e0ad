package dev.criugpu.api.sys;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** An images directory someone else prepared: what is planted there is never written through. */
class ImageFilesTest {
    @TempDir
    Path images;
    @TempDir
    Path elsewhere;

    @Test
    void aNewFileIsPrivate() throws Exception {
        try (FileChannel ch = ImageFiles.createNew(images, "amdgpu-kfd-5.img")) {
            ch.write(ByteBuffer.wrap(new byte[]{1, 2, 3}));
        }
        assertEquals(3, Files.size(images.resolve("amdgpu-kfd-5.img")));
        assertEquals("rw-------", PosixFilePermissions.toString(
                Files.getPosixFilePermissions(images.resolve("amdgpu-kfd-5.img"))));
    }

    @Test
    void aPlantedSymlinkIsNeitherFollowedNorReplaced() throws Exception {
        Path victim = Files.writeString(elsewhere.resolve("shadow"), "root:x:0:0\n");
        Files.createSymbolicLink(images.resolve("cuda-plugin-7.img"), victim);
        assertThrows(FileAlreadyExistsException.class, () -> ImageFiles.createNew(images, "cuda-plugin-7.img"));
        Files.createSymbolicLink(images.resolve("dangling.img"), elsewhere.resolve("not-yet"));
        assertThrows(FileAlreadyExistsException.class, () -> ImageFiles.createNew(images, "dangling.img"));
        assertEquals("root:x:0:0\n", Files.readString(victim));
        assertFalse(Files.exists(elsewhere.resolve("not-yet")), "the dangling link's target was not created");
    }

    @Test
    void aTemporaryFileHasAFreshHiddenNameBesideItsTarget() throws Exception {
        ImageFiles.Temporary t = ImageFiles.createTemporary(images, "inventory.img");
        t.channel().close();
        assertEquals(images, t.path().getParent());
        assertTrue(t.path().getFileName().toString().matches("\\.inventory\\.img\\.[0-9a-f]+\\.tmp"), t.path().toString());
    }

    @Test
    void filesOfADirectoryBoundToAnFdGoThereWhateverItsPathComesToMean() throws Exception {
        Path dir = Files.createDirectory(elsewhere.resolve("images"));
        int fd = Syscalls.libc().open(dir.toString(), Syscalls.O_RDONLY | Syscalls.O_DIRECTORY | Syscalls.O_CLOEXEC);
        try {
            ImageFiles.useDirectoryFd(dir, fd);
            Path moved = Files.move(dir, elsewhere.resolve("moved"));
            Files.createSymbolicLink(dir, images); // the old path now leads somewhere else
            try (FileChannel ch = ImageFiles.createNew(dir, "cuda-plugin-9.img")) {
                ch.write(ByteBuffer.wrap(new byte[]{9}));
            }
            ImageFiles.Temporary t = ImageFiles.createTemporary(dir, "inventory.img");
            t.channel().close();
            ImageFiles.rename(dir, t.path().getFileName().toString(), "inventory.img");
            assertTrue(ImageFiles.delete(dir, "cuda-plugin-9.img"));
            assertFalse(ImageFiles.delete(dir, "cuda-plugin-9.img"));
            try (var listed = Files.list(moved)) {
                assertEquals(List.of(moved.resolve("inventory.img")), listed.toList());
            }
            try (var listed = Files.list(images)) {
                assertEquals(List.of(), listed.toList(), "a file went where the path leads now");
            }
        } finally {
            Syscalls.libc().close(fd);
        }
    }

    @Test
    void readersOfADirectoryBoundToAnFdReadThereWhateverItsPathComesToMean() throws Exception {
        Path dir = Files.createDirectory(elsewhere.resolve("images"));
        Files.writeString(dir.resolve("pstree.img"), "criu's");
        Files.writeString(dir.resolve("cuda-plugin-7.img"), "record");
        int fd = Syscalls.libc().open(dir.toString(), Syscalls.O_RDONLY | Syscalls.O_DIRECTORY | Syscalls.O_CLOEXEC);
        try {
            ImageFiles.useDirectoryFd(dir, fd);
            // the owner of a parent directory moves the images away and points their path at files of their own
            Path moved = Files.move(dir, elsewhere.resolve("moved"));
            Files.writeString(images.resolve("pstree.img"), "planted");
            Files.writeString(images.resolve("core-1.img"), "planted");
            Files.createSymbolicLink(dir, images);

            try (FileChannel ch = RegularFiles.openForReading(dir.resolve("pstree.img"))) {
                assertEquals("criu's", read(ch));
            }
            try (FileChannel ch = ImageFiles.openForReading(dir, "cuda-plugin-7.img")) {
                assertEquals("record", read(ch));
            }
            assertEquals(List.of("cuda-plugin-7.img", "pstree.img"), ImageFiles.list(dir));
            assertTrue(ImageFiles.exists(dir, "pstree.img"));
            assertFalse(ImageFiles.exists(dir, "core-1.img"), "a file where the path leads now");
            assertThrows(java.nio.file.NoSuchFileException.class, () -> ImageFiles.openForReading(dir, "core-1.img"));
            assertEquals(List.of("cuda-plugin-7.img", "pstree.img"), ImageFiles.list(moved));
        } finally {
            Syscalls.libc().close(fd);
        }
    }

    @Test
    void aSymlinkCountsAsThereAndIsNotReadThrough() throws Exception {
        Path target = Files.writeString(elsewhere.resolve("secret"), "not yours");
        Files.createSymbolicLink(images.resolve("cuda-plugin-inherited.img"), target);
        assertTrue(ImageFiles.exists(images, "cuda-plugin-inherited.img"));
        assertEquals("is a symbolic link, not a regular file", assertThrows(RegularFiles.NotRegularFileException.class,
                () -> ImageFiles.openForReading(images, "cuda-plugin-inherited.img")).getMessage());
        assertThrows(java.nio.file.NoSuchFileException.class,
                () -> ImageFiles.openForReading(images.resolve("no-such-dir"), "pstree.img"));
        assertThrows(IllegalArgumentException.class, () -> ImageFiles.openForReading(images, "../secret"));
    }

    private static String read(FileChannel ch) throws IOException {
        ByteBuffer b = ByteBuffer.allocate((int) ch.size());
        while (b.hasRemaining() && ch.read(b) >= 0) {
            // reads the whole file
        }
        return new String(b.array(), java.nio.charset.StandardCharsets.UTF_8);
    }

    @Test
    void permissionsAreCopiedFromARegularFileOnlyAndNeverSetThroughASymlink() throws Exception {
        Path victim = Files.writeString(elsewhere.resolve("shadow"), "root:x:0:0\n");
        Files.setPosixFilePermissions(victim, PosixFilePermissions.fromString("rw-------"));
        Files.createSymbolicLink(images.resolve("inventory.img"), victim);
        assertEquals(Optional.empty(), ImageFiles.permissions(images, "inventory.img"));
        assertThrows(IOException.class, () -> ImageFiles.setPermissions(images, "inventory.img",
                PosixFilePermissions.fromString("rwxrwxrwx")));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(victim)));
        Files.writeString(images.resolve("pstree.img"), "");
        Files.setPosixFilePermissions(images.resolve("pstree.img"), PosixFilePermissions.fromString("rw-r-----"));
        assertEquals(Optional.of(PosixFilePermissions.fromString("rw-r-----")), ImageFiles.permissions(images, "pstree.img"));
    }

    @Test
    void onlyPlainNamesAreAccepted() {
        assertThrows(IllegalArgumentException.class, () -> ImageFiles.createNew(images, "../escape.img"));
        assertThrows(IllegalArgumentException.class, () -> ImageFiles.createNew(images, ".."));
    }
}

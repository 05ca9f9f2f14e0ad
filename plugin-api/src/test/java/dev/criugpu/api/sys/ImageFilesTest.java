package dev.criugpu.api.sys;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

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
    void onlyPlainNamesAreAccepted() {
        assertThrows(IllegalArgumentException.class, () -> ImageFiles.createNew(images, "../escape.img"));
        assertThrows(IllegalArgumentException.class, () -> ImageFiles.createNew(images, ".."));
    }
}

package dev.criugpu.inventory;

import dev.criugpu.inventory.images.PstreeEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** The writers run as root in an images directory others may have prepared: a planted symlink is replaced, not followed. */
class PlantedSymlinkTest {
    @TempDir
    Path images;
    @TempDir
    Path elsewhere;

    @Test
    void imagesAndRawPagesReplaceASymlinkAtTheirName() throws Exception {
        Path victim = Files.writeString(elsewhere.resolve("victim"), "untouched");
        Files.createSymbolicLink(images.resolve("pstree.img"), victim);
        Files.createSymbolicLink(images.resolve("pages-1.img"), victim);

        ImageIO.writeEntries(images.resolve("pstree.img"), ImageIO.PSTREE_MAGIC,
                List.of(PstreeEntry.newBuilder().setPid(7).setPpid(0).setPgid(7).setSid(7).build()));
        RawPages.write(images.resolve("pages-1.img"), ByteBuffer.wrap(new byte[]{1, 2, 3}));

        assertEquals("untouched", Files.readString(victim));
        assertFalse(Files.isSymbolicLink(images.resolve("pstree.img")));
        assertEquals(7, RestoreIds.of(images).iterator().next());
        assertEquals(3, Files.size(images.resolve("pages-1.img")));
        try (var left = Files.list(images)) {
            assertEquals(2, left.count(), "no temporary file left");
        }
    }
}

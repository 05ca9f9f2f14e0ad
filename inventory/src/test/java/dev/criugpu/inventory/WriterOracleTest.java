package dev.criugpu.inventory;

import dev.criugpu.inventory.images.InventoryEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Our writer's inventories were decoded once by crit (src/test/resources/images/written-&#42;/inventory.img.json);
 * these tests require that today's writer still produces exactly those bytes, and that they say what we meant.
 */
class WriterOracleTest {

    @Test
    void writerReproducesTheBytesCritDecoded(@TempDir Path tmp) throws Exception {
        Path real = Fixtures.dir("tree").resolve("inventory.img");
        for (WrittenFixtures.Case c : WrittenFixtures.CASES) {
            Path written = WrittenFixtures.write(real, c, tmp.resolve(c.name()));
            Path oracle = Fixtures.dir(c.name()).resolve("inventory.img");
            assertArrayEquals(Files.readAllBytes(oracle), Files.readAllBytes(written), c.name());
        }
    }

    @Test
    void critSeesThePluginsWeWrote() throws Exception {
        for (WrittenFixtures.Case c : WrittenFixtures.CASES) {
            Path img = Fixtures.dir(c.name()).resolve("inventory.img");
            var crit = Json.object(Fixtures.critEntries(img).getFirst());
            if (c.plugins() == null) {
                assertFalse(crit.containsKey("plugins_entry"), c.name());
            } else {
                var pe = Json.object(crit.get("plugins_entry"));
                List<Object> critPlugins = pe.containsKey("plugins") ? Json.array(pe.get("plugins")) : List.of();
                assertEquals(c.plugins(), critPlugins, c.name());
            }
            // And the rest of the entry is still the real dump's, as crit reads it.
            InventoryEntry ours = ImageIO.readSingle(img, ImageIO.INVENTORY_MAGIC, InventoryEntry.parser());
            assertEquals(ProtoJson.normaliseEntry(crit), ProtoJson.toMap(ours), c.name());
        }
    }

    @Test
    void rewritingWithoutChangeKeepsCriusBytes(@TempDir Path tmp) throws Exception {
        Path dir = Fixtures.copy("tree", tmp.resolve("t"));
        byte[] before = Files.readAllBytes(dir.resolve("inventory.img"));
        InventoryPlugins.rewriteInventory(dir, inv -> inv);
        assertArrayEquals(before, Files.readAllBytes(dir.resolve("inventory.img")));
    }

    @Test
    void writtenImagesReadBack(@TempDir Path tmp) throws Exception {
        Path tree = Fixtures.dir("tree");
        var pstree = ImageIO.readEntries(tree.resolve("pstree.img"), ImageIO.PSTREE_MAGIC,
                dev.criugpu.inventory.images.PstreeEntry.parser());
        Path out = tmp.resolve("pstree.img");
        ImageIO.writeEntries(out, ImageIO.PSTREE_MAGIC, pstree);
        assertArrayEquals(Files.readAllBytes(tree.resolve("pstree.img")), Files.readAllBytes(out));
        try (var files = Files.list(tmp)) {
            assertTrue(files.allMatch(p -> p.equals(out)), "no temporary file left behind");
        }
    }
}

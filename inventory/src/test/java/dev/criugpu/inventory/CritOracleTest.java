package dev.criugpu.inventory;

import dev.criugpu.inventory.images.CoreEntry;
import dev.criugpu.inventory.images.InventoryEntry;
import dev.criugpu.inventory.images.PstreeEntry;
import dev.criugpu.inventory.images.TaskKobjIdsEntry;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Our reader against crit's decode of the same real criu 4.2.1 images, field by field. */
class CritOracleTest {
    private final Path tree = Fixtures.dir("tree");

    @Test
    void inventoryDecodesExactlyAsCrit() throws Exception {
        Path img = tree.resolve("inventory.img");
        List<InventoryEntry> ours = ImageIO.readEntries(img, ImageIO.INVENTORY_MAGIC, InventoryEntry.parser());
        assertEquals(1, ours.size());
        // Whole-entry equality: every field crit shows, we decode with the same value, and nothing more.
        assertEquals(ProtoJson.normaliseEntry(Fixtures.critEntries(img).getFirst()), ProtoJson.toMap(ours.getFirst()));
        assertTrue(ours.getFirst().getUnknownFields().asMap().isEmpty(), "criu 4.2.1 inventory has no field we lack");
        assertTrue(ours.getFirst().hasPluginsEntry(), "criu 4.2.1 records the plugins field");
        assertEquals(0, ours.getFirst().getPluginsEntry().getPluginsCount());
    }

    @Test
    void pstreeDecodesExactlyAsCrit() throws Exception {
        Path img = tree.resolve("pstree.img");
        List<PstreeEntry> ours = ImageIO.readEntries(img, ImageIO.PSTREE_MAGIC, PstreeEntry.parser());
        List<Object> crit = Fixtures.critEntries(img);
        assertEquals(crit.size(), ours.size());
        assertTrue(ours.size() >= 3, "the fixture is a tree of sh and two sleeps");
        for (int i = 0; i < ours.size(); i++) {
            assertEquals(ProtoJson.normaliseEntry(crit.get(i)), ProtoJson.toMap(ours.get(i)), "pstree entry " + i);
        }
    }

    @Test
    void idsDecodeExactlyAsCrit() throws Exception {
        int checked = 0;
        for (Path img : Fixtures.images(tree)) {
            if (!img.getFileName().toString().startsWith("ids-")) continue;
            List<TaskKobjIdsEntry> ours = ImageIO.readEntries(img, ImageMagic.IDS, TaskKobjIdsEntry.parser());
            assertEquals(ProtoJson.normaliseEntry(Fixtures.critEntries(img).getFirst()), ProtoJson.toMap(ours.getFirst()),
                    img.getFileName().toString());
            checked++;
        }
        assertEquals(3, checked);
    }

    /** Core images carry far more than we declare: each field we do declare must match crit's value. */
    @Test
    void coreFieldsWeDeclareMatchCrit() throws Exception {
        List<String> comms = new ArrayList<>();
        for (Path img : Fixtures.images(tree)) {
            if (!img.getFileName().toString().startsWith("core-")) continue;
            CoreEntry ours = ImageIO.readEntries(img, ImageMagic.CORE, CoreEntry.parser()).getFirst();
            Map<String, Object> crit = ProtoJson.normaliseEntry(Fixtures.critEntries(img).getFirst());
            assertSubset(crit, ProtoJson.toMap(ours), img.getFileName().toString());
            assertFalse(ours.getUnknownFields().asMap().isEmpty(), "registers stay as unknown fields");
            comms.add(ours.getTc().getComm());
        }
        assertEquals(List.of("sh", "sleep", "sleep"), comms);
    }

    /** Every image of the dump frames exactly as many entries as crit shows, with the magic crit names. */
    @Test
    void everyImageFramesLikeCrit() throws Exception {
        int files = 0;
        for (Path img : Fixtures.images(tree)) {
            int entries = 0;
            try (ImageReader r = ImageReader.openAny(img)) {
                while (r.nextRaw() != null) entries++;
                String critMagic = Fixtures.critMagic(img);
                String ours = ImageMagic.describe(r.imageMagic());
                if (ours.contains("(")) {
                    assertEquals(critMagic.toLowerCase().replace('_', '-'), ours.replaceAll(".*\\((.*)\\)", "$1"),
                            img.getFileName().toString());
                }
            }
            assertEquals(Fixtures.critEntries(img).size(), entries, img.getFileName().toString());
            files++;
        }
        assertTrue(files >= 20, "fixture has the whole dump except pages: " + files);
    }

    private static void assertSubset(Map<String, Object> crit, Map<String, Object> ours, String where) {
        for (Map.Entry<String, Object> e : ours.entrySet()) {
            Object critValue = crit.get(e.getKey());
            if (e.getValue() instanceof Map<?, ?> nested) {
                @SuppressWarnings("unchecked")
                Map<String, Object> n = (Map<String, Object>) nested;
                @SuppressWarnings("unchecked")
                Map<String, Object> c = (Map<String, Object>) critValue;
                assertSubset(c, n, where + "." + e.getKey());
            } else {
                assertEquals(critValue, e.getValue(), where + "." + e.getKey());
            }
        }
    }
}

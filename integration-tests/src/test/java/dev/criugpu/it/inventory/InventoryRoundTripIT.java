package dev.criugpu.it.inventory;

import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.ImageIO;
import dev.criugpu.inventory.InventoryPlugins;
import dev.criugpu.inventory.images.InventoryEntry;
import dev.criugpu.inventory.images.PstreeEntry;
import dev.criugpu.it.CounterWorkload;
import dev.criugpu.it.CriuCommand;
import dev.criugpu.it.CriuContainer;
import dev.criugpu.it.CriuImage;
import dev.criugpu.it.DockerRequired;
import dev.criugpu.it.SharedCriuContainer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.math.BigInteger;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 3, round trip against the independent oracle: criu 4.2.1 dumps a parent and its child; our reader decodes
 * the copied-out inventory.img and pstree.img to exactly what {@code crit show} prints; the inventory our writer
 * rewrites with the same content decodes identically in crit, and criu restores the tree from it.
 */
@ExtendWith(DockerRequired.class)
class InventoryRoundTripIT {
    private static final String IMAGES = "/tmp/inv-roundtrip.img";
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.plain(CriuImage.CRIU_4_2_1);

    @Test
    void readerMatchesCritAndCriuRestoresFromOurRewrittenInventory(CriuContainer criu, @TempDir Path host) throws ImageException {
        CounterWorkload tree = CounterWorkload.startTree(criu, "/tmp/inv-roundtrip");
        CriuCommand.dump(tree.rootPid(), IMAGES).runIn(criu).orFail();
        List<Long> atDump = tree.awaitDumped();
        ImageTransfer.copyDirOut(criu, IMAGES, host);

        Crit.Image critInventory = Crit.show(criu, IMAGES + "/inventory.img");
        Crit.Image critPstree = Crit.show(criu, IMAGES + "/pstree.img");
        assertEquals("INVENTORY", critInventory.magic());
        assertEquals("PSTREE", critPstree.magic());

        InventoryEntry inventory = InventoryPlugins.read(host);
        assertEquals(critInventory.single(), CritForm.of(inventory), "inventory.img: our decode vs crit show");
        // The dump is not trivially empty: both tools saw the fields criu 4.2.1 always writes.
        assertTrue(critInventory.single().keySet().containsAll(List.of("img_version", "root_ids", "plugins_entry",
                "dump_criu_run_id")), "crit shows " + critInventory.single().keySet());

        List<PstreeEntry> pstree = ImageIO.readEntries(host.resolve("pstree.img"), ImageIO.PSTREE_MAGIC,
                PstreeEntry.parser());
        assertEquals(critPstree.entries(), pstree.stream().map(CritForm::of).toList(), "pstree.img: our decode vs crit");
        assertTreeIsTheWorkload(tree, critPstree.entries());

        InventoryEntry written = InventoryPlugins.rewriteInventory(host, inv -> inv.toBuilder().build());
        assertEquals(inventory, written);
        criu.copyIn(host.resolve("inventory.img"), IMAGES + "/inventory.img");
        Crit.Image critRewritten = Crit.show(criu, IMAGES + "/inventory.img");
        assertEquals(critInventory, critRewritten, "crit decodes the inventory our writer wrote differently");

        CriuCommand.restore(IMAGES).runIn(criu).orFail();
        tree.assertContinuedFrom(atDump);
        tree.kill();
    }

    /** crit's pstree is the parent and child we started, so the comparison above is about real values. */
    private static void assertTreeIsTheWorkload(CounterWorkload tree, List<Object> critEntries) {
        int parent = tree.counters().get(0).pid();
        int child = tree.counters().get(1).pid();
        assertEquals(2, critEntries.size(), "pstree entries: " + critEntries);
        Map<String, Object> p = Crit.asObject(critEntries.get(0));
        Map<String, Object> c = Crit.asObject(critEntries.get(1));
        assertEquals(BigInteger.valueOf(parent), p.get("pid"));
        assertEquals(BigInteger.ZERO, p.get("ppid"));
        assertEquals(BigInteger.valueOf(child), c.get("pid"));
        assertEquals(BigInteger.valueOf(parent), c.get("ppid"));
        assertEquals(List.of(BigInteger.valueOf(child)), c.get("threads"));
    }
}

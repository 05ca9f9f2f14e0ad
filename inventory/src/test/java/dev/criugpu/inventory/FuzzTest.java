package dev.criugpu.inventory;

import dev.criugpu.api.ByteMutations;

import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import dev.criugpu.inventory.images.CoreEntry;
import dev.criugpu.inventory.images.InventoryEntry;
import dev.criugpu.inventory.images.PstreeEntry;
import dev.criugpu.inventory.inspect.InspectCommand;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Mutated real images (seeded, bounded by iteration count): the reader either decodes them or fails with a
 * one-line ImageException naming the file; inspect either reports or exits 1 with one line. Nothing else.
 */
class FuzzTest {
    private static final int ITERATIONS = 1500;

    @TempDir
    Path tmp;

    @Test
    void mutatedImagesDecodeOrFailCleanly() throws Exception {
        Random random = new Random(0x5eed_c41a);
        Path tree = Fixtures.dir("tree");
        record Target(String file, int magic, Parser<? extends MessageLite> parser) {
        }
        Target[] targets = {
                new Target("inventory.img", ImageIO.INVENTORY_MAGIC, InventoryEntry.parser()),
                new Target("pstree.img", ImageIO.PSTREE_MAGIC, PstreeEntry.parser()),
                new Target("core-16.img", ImageMagic.CORE, CoreEntry.parser()),
        };
        int decoded = 0;
        int rejected = 0;
        for (int i = 0; i < ITERATIONS; i++) {
            Target t = targets[i % targets.length];
            byte[] bytes = mutate(Files.readAllBytes(tree.resolve(t.file())), random);
            Path p = tmp.resolve(t.file());
            Files.write(p, bytes);
            try {
                ImageIO.readEntries(p, t.magic(), t.parser());
                decoded++;
            } catch (ImageException e) {
                assertTrue(e.getMessage().startsWith(p + ": "), e.getMessage());
                assertFalse(e.getMessage().contains("\n"), e.getMessage());
                rejected++;
            } catch (RuntimeException e) {
                fail("iteration " + i + " on " + t.file() + ": " + e, e);
            }
        }
        // Both outcomes must really occur, or the mutations are not exercising anything.
        assertTrue(decoded > 50 && rejected > 50, "decoded " + decoded + ", rejected " + rejected);
    }

    @Test
    void inspectOnMutatedCheckpointsReportsOrFailsWithOneLine() throws Exception {
        Random random = new Random(42);
        Path dir = Fixtures.copy("tree", tmp.resolve("t"));
        String[] victims = {"inventory.img", "pstree.img", "core-16.img", "core-20.img"};
        for (int i = 0; i < 300; i++) {
            String victim = victims[i % victims.length];
            Path original = Fixtures.dir("tree").resolve(victim);
            Files.write(dir.resolve(victim), mutate(Files.readAllBytes(original), random));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            String[] args = i % 2 == 0 ? new String[] {dir.toString(), "--json"} : new String[] {dir.toString()};
            int rc = InspectCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
            String e = err.toString(StandardCharsets.UTF_8);
            if (rc == 0) {
                assertEquals("", e);
            } else {
                assertEquals(InspectCommand.BAD_CHECKPOINT, rc);
                assertEquals(1, e.lines().count(), e);
                assertTrue(e.contains(dir.toString()), e);
                assertEquals("", out.toString(StandardCharsets.UTF_8));
            }
            Files.copy(original, dir.resolve(victim), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /** One of: flip bits, overwrite a byte, cut the tail, insert bytes, or rewrite a little-endian length. */
    static byte[] mutate(byte[] in, Random r) {
        byte[] b = in.clone();
        int which = r.nextInt(ByteMutations.GENERIC + 1);
        if (which < ByteMutations.GENERIC) return ByteMutations.generic(which, b, r);
        // the format's own: rewrite a length field
        if (b.length >= 12) {
            int v = r.nextBoolean() ? r.nextInt() : r.nextInt(64);
            boolean inventory = b[0] == 0x16 && b[1] == 0x31 && b[2] == 0x31 && b[3] == 0x58;
            int at = inventory ? 4 : 8; // the first entry's length
            b[at] = (byte) v;
            b[at + 1] = (byte) (v >>> 8);
            b[at + 2] = (byte) (v >>> 16);
            b[at + 3] = (byte) (v >>> 24);
        }
        return b;
    }
}

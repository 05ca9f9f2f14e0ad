package dev.criugpu.inventory;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import dev.criugpu.inventory.images.InventoryEntry;
import dev.criugpu.inventory.images.PstreeEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Damaged images give one clear line naming the file and the reason, and never change anything. */
class BadInputTest {
    @TempDir
    Path tmp;

    private final Path tree = Fixtures.dir("tree");

    private Path damaged(String name, byte[] bytes) throws Exception {
        Path p = tmp.resolve(name);
        Files.write(p, bytes);
        return p;
    }

    private static ImageException readPstreeFails(Path p) {
        return assertThrows(ImageException.class,
                () -> ImageIO.readEntries(p, ImageIO.PSTREE_MAGIC, PstreeEntry.parser()));
    }

    private static void assertOneLine(ImageException e, Path file, String reason) {
        String m = e.getMessage();
        assertTrue(m.startsWith(file.toString() + ": "), m);
        assertFalse(m.contains("\n"), m);
        assertTrue(m.contains(reason), "expected '" + reason + "' in: " + m);
        assertEquals(file, e.file());
    }

    @Test
    void aSymlinkNamedLikeAnImageIsRefusedAndNothingOfItsTargetIsPrinted() throws Exception {
        Path secret = Files.write(tmp.resolve("secret"), "SECRET-BYTES".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        Path link = Files.createSymbolicLink(tmp.resolve("pstree.img"), secret);
        ImageException e = readPstreeFails(link);
        assertOneLine(e, link, "is a symbolic link, not a regular file; refused");
        assertFalse(e.getMessage().contains("0x") || e.getMessage().contains("SECR"), e.getMessage());
        assertThrows(ImageException.class, () -> RawPages.open(link));
    }

    @Test
    void aFifoNamedLikeAnImageIsRefusedAtOnce() throws Exception {
        Path fifo = tmp.resolve("inventory.img");
        Process mk = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
        assertEquals(0, mk.waitFor());
        // nobody writes to the FIFO: a reader that opened it blocking would never return
        assertOneLine(assertThrows(ImageException.class, () -> ImageReader.openAny(fifo)), fifo,
                "is a FIFO, not a regular file; refused");
        assertOneLine(assertThrows(ImageException.class, () -> RawPages.open(fifo)), fifo, "is a FIFO");
    }

    @Test
    void truncatedEntry() throws Exception {
        byte[] real = Files.readAllBytes(tree.resolve("pstree.img"));
        Path p = damaged("pstree.img", Arrays.copyOf(real, real.length - 3));
        assertOneLine(readPstreeFails(p), p, "declares");
    }

    @Test
    void truncatedLengthField() throws Exception {
        byte[] real = Files.readAllBytes(tree.resolve("pstree.img"));
        byte[] cut = Arrays.copyOf(real, real.length + 2); // two stray bytes after the last entry
        Path p = damaged("pstree.img", cut);
        assertOneLine(readPstreeFails(p), p, "truncated entry");
    }

    @Test
    void wrongMagic() throws Exception {
        Path p = damaged("pstree.img", Files.readAllBytes(tree.resolve("core-16.img")));
        assertOneLine(readPstreeFails(p), p, "wrong magic 0x55053847 (core)");
        Path inv = damaged("inventory.img", Files.readAllBytes(tree.resolve("pstree.img")));
        ImageException e = assertThrows(ImageException.class, () -> InventoryPlugins.read(tmp));
        assertOneLine(e, inv, "expected 0x58313116 (inventory)");
    }

    @Test
    void entryLengthBeyondFile() throws Exception {
        byte[] real = Files.readAllBytes(tree.resolve("pstree.img"));
        ByteBuffer.wrap(real).order(ByteOrder.LITTLE_ENDIAN).putInt(8, 0x7fff_0000);
        Path p = damaged("pstree.img", real);
        assertOneLine(readPstreeFails(p), p, "declares 2147418112 bytes but only");
    }

    @Test
    void garbageProtobuf() throws Exception {
        byte[] garbage = {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07};
        Path p = damaged("pstree.img", image(ImageIO.COMMON_MAGIC, ImageIO.PSTREE_MAGIC, garbage));
        assertOneLine(readPstreeFails(p), p, "is not a valid PstreeEntry");
    }

    @Test
    void validProtobufMissingRequiredFields() throws Exception {
        byte[] onlyPid = {0x08, 0x05}; // pid = 5; ppid, pgid, sid missing
        Path p = damaged("pstree.img", image(ImageIO.COMMON_MAGIC, ImageIO.PSTREE_MAGIC, onlyPid));
        assertOneLine(readPstreeFails(p), p, "is not a valid PstreeEntry");
    }

    @Test
    void emptyFileAndShortHeader() throws Exception {
        Path empty = damaged("pstree.img", new byte[0]);
        assertOneLine(readPstreeFails(empty), empty, "empty file");
        Path half = damaged("half.img", new byte[] {0x19, 0x43, 0x56, 0x54, 0x30});
        assertOneLine(readPstreeFails(half), half, "inside the magic header");
    }

    @Test
    void missingFileAndEmptyDirectory() throws Exception {
        Path missing = tmp.resolve("pstree.img");
        assertOneLine(readPstreeFails(missing), missing, "no such image file");
        ImageException e = assertThrows(ImageException.class, () -> InventoryPlugins.claimFor(tmp, "cuda_plugin"));
        assertOneLine(e, tmp.resolve("inventory.img"), "no such image file");
    }

    @Test
    void inventoryWithTwoEntriesIsRejected() throws Exception {
        byte[] real = Files.readAllBytes(tree.resolve("inventory.img"));
        byte[] twice = new byte[real.length * 2 - 4];
        System.arraycopy(real, 0, twice, 0, real.length);
        System.arraycopy(real, 4, twice, real.length, real.length - 4);
        Path p = damaged("inventory.img", twice);
        assertOneLine(assertThrows(ImageException.class, () -> InventoryPlugins.read(tmp)), p, "exactly one entry");
    }

    /** A newer criu may add fields: they are read, and kept when we rewrite the inventory. */
    @Test
    void unknownExtraFieldsAreToleratedAndPreserved() throws Exception {
        InventoryEntry real = InventoryPlugins.read(tree);
        UnknownFieldSet extra = UnknownFieldSet.newBuilder()
                .addField(99, UnknownFieldSet.Field.newBuilder().addVarint(42).build())
                .addField(100, UnknownFieldSet.Field.newBuilder().addLengthDelimited(ByteString.copyFromUtf8("x")).build())
                .build();
        byte[] body = real.toBuilder().setUnknownFields(extra).build().toByteArray();
        Files.write(tmp.resolve("inventory.img"), image(ImageIO.INVENTORY_MAGIC, null, body));

        InventoryEntry read = InventoryPlugins.read(tmp);
        assertEquals(real.getImgVersion(), read.getImgVersion());
        assertEquals(real.getRootIds(), read.getRootIds());
        assertEquals(List.of(42L), read.getUnknownFields().getField(99).getVarintList());

        InventoryPlugins.setPlugins(tmp, List.of("cuda_plugin"));
        InventoryEntry after = InventoryPlugins.read(tmp);
        assertEquals(List.of("cuda_plugin"), after.getPluginsEntry().getPluginsList());
        assertEquals(extra, after.getUnknownFields());
    }

    @Test
    void refusedWriteLeavesTheImageUntouched() throws Exception {
        Path dir = Fixtures.copy("tree", tmp.resolve("t"));
        byte[] before = Files.readAllBytes(dir.resolve("inventory.img"));
        ImageException e = assertThrows(ImageException.class,
                () -> InventoryPlugins.rewriteInventory(dir, inv -> InventoryEntry.newBuilder().buildPartial()));
        assertOneLine(e, dir.resolve("inventory.img"), "missing required fields");
        assertArrayEquals(before, Files.readAllBytes(dir.resolve("inventory.img")));
        try (var s = Files.list(dir)) {
            assertTrue(s.noneMatch(p -> p.getFileName().toString().startsWith(".")), "temporary file removed");
        }
    }

    static byte[] image(int first, Integer second, byte[]... entries) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer b = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        out.writeBytes(b.putInt(0, first).array().clone());
        if (second != null) out.writeBytes(b.putInt(0, second).array().clone());
        for (byte[] e : entries) {
            out.writeBytes(b.putInt(0, e.length).array().clone());
            out.writeBytes(e);
        }
        return out.toByteArray();
    }
}

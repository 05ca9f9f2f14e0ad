package dev.criugpu.inventory;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.RestoredTaskIds;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ServiceLoader;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RestoreIdsTest {
    @Test
    void pidsAndThreadsOfTheRealTreeImage() throws Exception {
        // the fixture is criu 4.2.1's dump of sh (16) with two sleeps (20, 21), one thread each
        assertEquals(Set.of(16, 20, 21), RestoreIds.of(Fixtures.dir("tree")));
    }

    @Test
    void theBootstrapFindsThemAndAnUnreadableImageIsOneLine() {
        RestoredTaskIds ids = ServiceLoader.load(RestoredTaskIds.class).findFirst().orElseThrow();
        assertEquals(Set.of(16, 20, 21), ids.of(Fixtures.dir("tree")));
        CriuException e = assertThrows(CriuException.class, () -> ids.of(Path.of("/nonexistent-dir")));
        assertEquals(Errno.EIO, e.errno());
        assertTrue(e.getMessage().startsWith("/nonexistent-dir/pstree.img: "), e.getMessage());
    }

    @Test
    void missingPstreeNamesTheFile() {
        ImageException e = assertThrows(ImageException.class, () -> RestoreIds.of(Path.of("/nonexistent-dir")));
        assertEquals(Path.of("/nonexistent-dir/pstree.img"), e.file());
    }

    @Test
    void theWireReadFindsWhatTheGeneratedParseFinds(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        ImageIO.writeEntries(dir.resolve("pstree.img"), ImageIO.PSTREE_MAGIC, java.util.List.of(
                dev.criugpu.inventory.images.PstreeEntry.newBuilder().setPid(400).setPpid(1).setPgid(350).setSid(301)
                        .addThreads(400).addThreads(401).addThreads(402).build(),
                dev.criugpu.inventory.images.PstreeEntry.newBuilder().setPid(410).setPpid(400).setPgid(350).setSid(0)
                        .addThreads(410).build()));
        assertEquals(Set.of(301, 350, 400, 401, 402, 410), RestoreIds.of(dir));
    }

    @Test
    void packedThreadsAreReadToo(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        // pid 500 (field 1), threads 500 and 501 packed (field 5, length-delimited), as another writer may emit them
        byte[] entry = {0x08, (byte) 0xf4, 0x03, 0x2a, 0x04, (byte) 0xf4, 0x03, (byte) 0xf5, 0x03};
        writeRaw(dir, entry);
        assertEquals(Set.of(500, 501), RestoreIds.of(dir));
    }

    @Test
    void bytesThatAreNoEntryAreOneLineNamingTheFile(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        writeRaw(dir, new byte[]{0x08, (byte) 0xff, (byte) 0xff});
        ImageException e = assertThrows(ImageException.class, () -> RestoreIds.of(dir));
        assertEquals(dir.resolve("pstree.img"), e.file());
        assertTrue(e.getMessage().contains("not a valid pstree entry"), e.getMessage());
    }

    /** pstree.img with its magics and one entry of these bytes (criu's framing: a u32 length before each entry). */
    private static void writeRaw(Path dir, byte[] entry) throws Exception {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(12 + entry.length).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.putInt(ImageIO.COMMON_MAGIC).putInt(ImageIO.PSTREE_MAGIC).putInt(entry.length).put(entry);
        java.nio.file.Files.write(dir.resolve("pstree.img"), b.array());
    }
}

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
}

package dev.criugpu.inventory;

import dev.criugpu.inventory.images.PstreeEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A restore's init reads pstree.img once: the pid check after the cuda plugin's init takes the same parse. */
class PstreeImageTest {
    @TempDir
    Path images;
    @TempDir
    Path other;

    static void writeTree(Path dir, int pid) throws Exception {
        ImageIO.writeEntries(dir.resolve("pstree.img"), ImageIO.PSTREE_MAGIC,
                List.of(PstreeEntry.newBuilder().setPid(pid).setPpid(0).setPgid(pid).setSid(pid).addThreads(pid).build()));
    }

    @Test
    void thePidCheckTakesWhatTheTaskListReadOnceAndOnlyOnce() throws Exception {
        writeTree(images, 7);
        assertEquals(Set.of(7), TreeTasks.resumed(images));
        writeTree(images, 8); // a second read would see this
        assertEquals(Set.of(7), RestoreIds.of(images), "the pid check read pstree.img again");
        assertEquals(Set.of(8), RestoreIds.of(images), "the hand-off is taken once");
    }

    @Test
    void anotherDirectoryIsReadFromItsFile() throws Exception {
        writeTree(images, 7);
        writeTree(other, 9);
        TreeTasks.resumed(images);
        assertEquals(Set.of(9), RestoreIds.of(other));
        writeTree(images, 8);
        assertEquals(Set.of(8), RestoreIds.of(images), "a hand-off survives only until the next pid check");
    }
}

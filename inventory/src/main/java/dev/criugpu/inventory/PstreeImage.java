package dev.criugpu.inventory;

import dev.criugpu.inventory.images.PstreeEntry;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * pstree.img, read once per restore: the cuda plugin's init reads it for the tasks criu resumes ({@link TreeTasks})
 * and hands the parse on to the bootstrap's pid check, which runs right after that init in the same hook call
 * ({@link RestoreIds}). The hand-off is taken once and only for the same directory; any other read goes to the file.
 */
final class PstreeImage {
    private record Kept(Path dir, List<PstreeEntry> entries) {
    }

    private static Kept kept;

    private PstreeImage() {
    }

    /** Reads pstree.img and keeps the parse for the next {@link #take} of the same directory. */
    static synchronized List<PstreeEntry> readAndKeep(Path imagesDir) throws ImageException {
        List<PstreeEntry> entries = readFile(imagesDir);
        kept = new Kept(imagesDir.toAbsolutePath().normalize(), entries);
        return entries;
    }

    /** What {@link #readAndKeep} kept for this directory (once), else the file read now. */
    static synchronized List<PstreeEntry> take(Path imagesDir) throws ImageException {
        Kept k = kept;
        kept = null;
        if (k != null && k.dir().equals(imagesDir.toAbsolutePath().normalize())) return k.entries();
        return readFile(imagesDir);
    }

    /** What {@link #readAndKeep} kept for this directory (once), without reading the file. */
    static synchronized Optional<List<PstreeEntry>> takeKept(Path imagesDir) {
        Kept k = kept;
        kept = null;
        return k != null && k.dir().equals(imagesDir.toAbsolutePath().normalize()) ? Optional.of(k.entries())
                : Optional.empty();
    }

    private static List<PstreeEntry> readFile(Path imagesDir) throws ImageException {
        return List.copyOf(ImageIO.readEntries(imagesDir.resolve("pstree.img"), ImageIO.PSTREE_MAGIC, PstreeEntry.parser()));
    }
}

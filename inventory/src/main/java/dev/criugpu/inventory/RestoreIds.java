package dev.criugpu.inventory;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Errno;
import dev.criugpu.api.PidGuard;
import dev.criugpu.inventory.images.PstreeEntry;

import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/** The process and thread ids a restore will create, from pstree.img. */
public final class RestoreIds {
    private RestoreIds() {
    }

    public static Set<Integer> of(Path imagesDir) throws ImageException {
        Set<Integer> ids = new TreeSet<>();
        for (PstreeEntry e : ImageIO.readEntries(imagesDir.resolve("pstree.img"), ImageIO.PSTREE_MAGIC,
                PstreeEntry.parser())) {
            ids.add(e.getPid());
            ids.addAll(e.getThreadsList());
        }
        return ids;
    }

    /**
     * DESIGN rule 3, checked where a restore runs Java before criu forks: no thread of this JVM may hold an id the
     * image's tasks need. Fails with one line otherwise; does nothing outside criu.
     */
    public static void requireNoJvmCollision(CriuServices services) {
        Optional<Path> dir = services.imageDir();
        if (dir.isEmpty()) return;
        try {
            PidGuard.requireDisjoint(PidGuard.ownTids(), of(dir.get()));
        } catch (ImageException e) {
            throw new CriuException(Errno.EIO, e.getMessage());
        }
    }
}

package dev.criugpu.inventory;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.RestoredTaskIds;
import dev.criugpu.inventory.images.PstreeEntry;

import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;

/** The process, thread, session and group ids a restore will create, from pstree.img. */
public final class RestoreIds {
    private RestoreIds() {
    }

    public static Set<Integer> of(Path imagesDir) throws ImageException {
        Set<Integer> ids = new TreeSet<>();
        for (PstreeEntry e : PstreeImage.take(imagesDir)) {
            ids.add(e.getPid());
            ids.addAll(e.getThreadsList());
            // criu makes a helper task for a session or group leader that is not in the tree: it takes that id too
            if (e.getPgid() > 0) ids.add(e.getPgid());
            if (e.getSid() > 0) ids.add(e.getSid());
        }
        return ids;
    }

    /** What the bootstrap checks the JVM's threads against on restore (found through the ServiceLoader). */
    public static final class Provider implements RestoredTaskIds {
        @Override
        public Set<Integer> of(Path imagesDir) {
            try {
                return RestoreIds.of(imagesDir);
            } catch (ImageException e) {
                throw new CriuException(Errno.EIO, e.getMessage());
            }
        }
    }
}

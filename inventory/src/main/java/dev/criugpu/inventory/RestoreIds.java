package dev.criugpu.inventory;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.RestoredTaskIds;
import dev.criugpu.inventory.images.PstreeEntry;

import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;

/** The process and thread ids a restore will create, from pstree.img. */
public final class RestoreIds {
    private RestoreIds() {
    }

    public static Set<Integer> of(Path imagesDir) throws ImageException {
        Set<Integer> ids = new TreeSet<>();
        for (PstreeEntry e : PstreeImage.take(imagesDir)) {
            ids.add(e.getPid());
            ids.addAll(e.getThreadsList());
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

package dev.criugpu.api;

import java.nio.file.Path;
import java.util.Set;

/**
 * The pids and tids a restore will create, as the checkpoint records them (pstree.img). The bootstrap checks the
 * JVM's threads against them once the last plugin's init has run (DESIGN rule 3). Found with
 * {@link java.util.ServiceLoader}; the inventory module provides it.
 */
public interface RestoredTaskIds {
    /** Fails with a {@link CriuException} naming the file when it cannot be read. */
    Set<Integer> of(Path imagesDir);
}

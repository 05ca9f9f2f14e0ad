package dev.criugpu.api;

import java.nio.file.Path;
import java.util.Set;

/** The image's pids and tids for bootstrap tests: whatever the test put in {@link #ids}. */
public final class FixedTaskIds implements RestoredTaskIds {
    static volatile Set<Integer> ids = Set.of();

    @Override
    public Set<Integer> of(Path imagesDir) {
        return ids;
    }
}

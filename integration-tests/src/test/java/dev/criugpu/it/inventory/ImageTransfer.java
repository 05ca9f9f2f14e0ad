package dev.criugpu.it.inventory;

import dev.criugpu.it.CriuContainer;

import java.nio.file.Path;
import java.util.List;

/**
 * Moves criu image files out of the container to this host, so our Java code reads the very files criu wrote
 * ({@link CriuContainer#copyIn} brings rewritten ones back).
 */
final class ImageTransfer {
    private ImageTransfer() {
    }

    /** Copies every regular file of the container's images directory into {@code hostDir}; returns their names. */
    static List<String> copyDirOut(CriuContainer container, String imagesDir, Path hostDir) {
        String listing = container.exec("find", imagesDir, "-maxdepth", "1", "-type", "f", "-printf", "%f\\n")
                .orFail().stdout();
        List<String> names = listing.lines().filter(l -> !l.isBlank()).sorted().toList();
        if (names.isEmpty()) throw new AssertionError("no files in " + imagesDir + " in the container");
        for (String name : names) container.copyOut(imagesDir + "/" + name, hostDir.resolve(name));
        return names;
    }
}

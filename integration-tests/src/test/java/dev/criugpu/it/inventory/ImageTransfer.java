package dev.criugpu.it.inventory;

import dev.criugpu.it.CriuContainer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;

/**
 * Moves criu image files between the container and this host, so our Java code reads and writes the very files
 * criu wrote and will read. Files go in as base64 text (the harness copies text into the container) and are
 * decoded there; every copy is read back and compared byte for byte.
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
        for (String name : names) copyOut(container, imagesDir + "/" + name, hostDir.resolve(name));
        return names;
    }

    static void copyOut(CriuContainer container, String containerPath, Path hostFile) {
        try {
            Files.createDirectories(hostFile.toAbsolutePath().getParent());
            Files.write(hostFile, container.readBytes(containerPath));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + hostFile, e);
        }
    }

    /** Replaces {@code containerPath} with the host file's exact bytes. */
    static void copyIn(Path hostFile, CriuContainer container, String containerPath) {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(hostFile);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + hostFile, e);
        }
        String staged = containerPath + ".b64";
        container.writeFile(staged, Base64.getEncoder().encodeToString(bytes), 0600);
        container.sh("base64 -d '" + staged + "' > '" + containerPath + "' && rm '" + staged + "'").orFail();
        byte[] there = container.readBytes(containerPath);
        if (!Arrays.equals(bytes, there)) {
            throw new AssertionError(containerPath + " in the container differs from " + hostFile + " after the copy");
        }
    }
}

package dev.criugpu.it.ship;

import dev.criugpu.it.CriuContainer;
import dev.criugpu.it.PluginDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

/** The Debian package native/ builds next to the plugin dir: {@code native/target/criu-java-gpu_<version>_amd64.deb}. */
record DebPackage(Path file) {
    static final String NAME = "criu-java-gpu";

    /** The one package the build made, or an AssertionError saying what is there instead. */
    static DebPackage fromBuild() {
        Path target = PluginDir.fromBuild().dir().getParent();
        List<Path> debs;
        try (Stream<Path> files = Files.list(target)) {
            debs = files.filter(p -> p.getFileName().toString().matches(NAME + "_[^_]+_amd64\\.deb")).toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + target, e);
        }
        if (debs.size() != 1) {
            throw new AssertionError("expected one " + NAME + "_<version>_amd64.deb in " + target + ", found " + debs
                    + " (mvn -B -pl native install builds it)");
        }
        return new DebPackage(debs.getFirst());
    }

    /**
     * Copies the package into the container at {@code path}: as base64 text (the harness copies text), decoded
     * there and checked against the host file's checksum.
     */
    void copyInto(CriuContainer container, String path) {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
        container.writeFile(path + ".b64", Base64.getEncoder().encodeToString(bytes), 0600);
        container.sh("base64 -d " + path + ".b64 > " + path + " && rm " + path + ".b64").orFail();
        String there = container.exec("sha256sum", path).orFail().stdout().split(" ")[0];
        if (!there.equals(sha256(bytes))) {
            throw new AssertionError(path + " in the container differs from " + file + " after the copy");
        }
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}

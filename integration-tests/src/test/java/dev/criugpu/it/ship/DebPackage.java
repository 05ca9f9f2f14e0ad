package dev.criugpu.it.ship;

import dev.criugpu.it.PluginDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
}

package dev.criugpu.inventory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** The committed real-criu fixtures (src/test/resources/images, made by inventory/fixtures/*.sh). */
public final class Fixtures {
    private Fixtures() {
    }

    public static Path dir(String caseName) {
        try {
            return Path.of(Fixtures.class.getResource("/images/" + caseName + "/inventory.img").toURI()).getParent();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** crit's decode of an image: the "entries" of {@code <image>.json}. */
    public static List<Object> critEntries(Path image) {
        try {
            Map<String, Object> doc = Json.object(Json.parse(Files.readString(Path.of(image + ".json"))));
            return Json.array(doc.get("entries"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static String critMagic(Path image) {
        try {
            return (String) Json.object(Json.parse(Files.readString(Path.of(image + ".json")))).get("magic");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static List<Path> images(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.toString().endsWith(".img")).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A writable copy of a fixture directory (images only). */
    public static Path copy(String caseName, Path to) throws IOException {
        Files.createDirectories(to);
        for (Path p : images(dir(caseName))) Files.copy(p, to.resolve(p.getFileName()));
        return to;
    }

    public static long num(Object o) {
        return ((Number) o).longValue();
    }
}

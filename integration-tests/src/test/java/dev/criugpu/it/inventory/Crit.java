package dev.criugpu.it.inventory;

import dev.criugpu.inventory.Json;
import dev.criugpu.it.CriuContainer;

import java.util.List;
import java.util.Map;

/** criu's own image decoder, {@code crit show}, run in the container: the independent oracle for our reader. */
final class Crit {
    private Crit() {
    }

    /** A decoded image: its magic name as crit prints it (e.g. {@code INVENTORY}) and its entries. */
    record Image(String magic, List<Object> entries) {
        Map<String, Object> single() {
            if (entries.size() != 1) throw new AssertionError("expected one entry, crit shows " + entries.size());
            return asObject(entries.getFirst());
        }
    }

    static Image show(CriuContainer container, String imagePath) {
        String out = container.exec("crit", "show", imagePath).orFail().stdout();
        Map<String, Object> doc = asObject(Json.parse(out));
        if (!(doc.get("magic") instanceof String magic) || !(doc.get("entries") instanceof List<?> entries)) {
            throw new AssertionError("crit show " + imagePath + " printed no magic/entries:\n" + out);
        }
        return new Image(magic, List.copyOf(entries));
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> asObject(Object o) {
        if (!(o instanceof Map<?, ?>)) throw new AssertionError("expected a JSON object, got " + o);
        return (Map<String, Object>) o;
    }
}

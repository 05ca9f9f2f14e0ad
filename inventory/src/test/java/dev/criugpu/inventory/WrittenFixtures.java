package dev.criugpu.inventory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * The inventories our writer produces from the real {@code tree} fixture. Run once by
 * fixtures/make-written-fixtures.sh (whose output crit then decodes as the oracle), and again by the tests,
 * which require the same bytes.
 */
public final class WrittenFixtures {
    /** Case name → plugins list to write; {@code null} clears the field (the shape older criu wrote). */
    static final List<Case> CASES = List.of(
            new Case("written-plugins", List.of("cuda_plugin", "amdgpu_plugin")),
            new Case("written-empty", List.of()),
            new Case("written-legacy", null));

    record Case(String name, List<String> plugins) {
    }

    /** Writes {@code c}'s inventory.img into {@code dir}, starting from the real dump's inventory. */
    static Path write(Path realInventory, Case c, Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.copy(realInventory, dir.resolve(InventoryPlugins.INVENTORY_IMG), StandardCopyOption.REPLACE_EXISTING);
        if (c.plugins() == null) InventoryPlugins.clearPlugins(dir);
        else InventoryPlugins.setPlugins(dir, c.plugins());
        return dir.resolve(InventoryPlugins.INVENTORY_IMG);
    }

    /** args: the images resource root (holding tree/). */
    public static void main(String[] args) throws IOException {
        Path root = Path.of(args[0]);
        for (Case c : CASES) {
            Path out = write(root.resolve("tree/inventory.img"), c, root.resolve(c.name()));
            System.out.println("wrote " + out);
        }
    }
}

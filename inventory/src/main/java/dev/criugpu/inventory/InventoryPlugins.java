package dev.criugpu.inventory;

import dev.criugpu.api.CriuServices;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.LogLevel;
import dev.criugpu.inventory.images.InventoryEntry;
import dev.criugpu.inventory.images.PluginsEntry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.WeakHashMap;
import java.util.function.UnaryOperator;

/**
 * The inventory {@code plugins} contract (DESIGN rule 7). inventory.img field 12 {@code plugins_entry} holds
 * {@code repeated string plugins}: absent means an image from a criu that predates the field (every plugin is
 * enabled as before); present means exactly these plugins hold state the restore needs; an empty list means
 * none does.
 *
 * <p>Offline readers (CLI, tests, inspect) use {@link #claimFor} and {@link #required}; plugins call
 * {@link #markHoldsState} during a dump the first time they really save GPU state.
 */
public final class InventoryPlugins {
    public static final String INVENTORY_IMG = "inventory.img";
    /**
     * Listed by a dump whose CUDA host copy is in criu-java-gpu's own format (kept out of criu's pages): criu refuses
     * its restore unless a loaded plugin claims the name, which only our cuda_plugin does.
     */
    public static final String HOST_COPY_FORMAT = "criu_gpu_hostcopy_v1";

    private static final Logger LOG = LoggerFactory.getLogger(InventoryPlugins.class);
    /** The answer criu gave each services instance (one per plugin per criu command). */
    private static final Map<CriuServices, Boolean> MARKED = Collections.synchronizedMap(new WeakHashMap<>());

    private InventoryPlugins() {
    }

    /** The inventory of an images directory. */
    public static InventoryEntry read(Path imagesDir) throws ImageException {
        return ImageIO.readSingle(imagesDir.resolve(INVENTORY_IMG), ImageIO.INVENTORY_MAGIC,
                InventoryEntry.parser());
    }

    /**
     * The plugins listed in the inventory, or empty when the field is absent (an older criu wrote it).
     * A present but empty list means the dump needs no plugin.
     */
    public static Optional<List<String>> listed(Path imagesDir) throws ImageException {
        InventoryEntry inv = read(imagesDir);
        return inv.hasPluginsEntry() ? Optional.of(List.copyOf(inv.getPluginsEntry().getPluginsList()))
                : Optional.empty();
    }

    /**
     * What a restore from {@code imagesDir} means for {@code plugin}: {@link InventoryClaim#LEGACY} (field
     * absent: enable as before), {@link InventoryClaim#LISTED} or {@link InventoryClaim#NOT_LISTED}. Never
     * {@link InventoryClaim#NONE}.
     */
    public static InventoryClaim claimFor(Path imagesDir, String plugin) throws ImageException {
        return listed(imagesDir)
                .map(names -> names.contains(plugin) ? InventoryClaim.LISTED : InventoryClaim.NOT_LISTED)
                .orElse(InventoryClaim.LEGACY);
    }

    /**
     * The plugins a restore of {@code imagesDir} fails without ("Missing required plugin"): the listed ones.
     * Empty both for an empty list and for a legacy image (criu requires nothing then; see {@link #listed}).
     */
    public static List<String> required(Path imagesDir) throws ImageException {
        return listed(imagesDir).orElse(List.of());
    }

    /**
     * Records, once per plugin and criu command, that this dump holds the plugin's state, so that a restore
     * requires the plugin: calls {@link CriuServices#addInventoryPlugin()} the first time only and returns
     * its answer on every call. False means the running criu cannot record it (older than 4.1, or failure);
     * the dump is still usable by a restore that loads the plugin anyway.
     */
    public static boolean markHoldsState(CriuServices services) {
        synchronized (MARKED) {
            Boolean known = MARKED.get(services);
            if (known != null) return known;
            boolean added = services.addInventoryPlugin();
            MARKED.put(services, added);
            if (added) {
                services.log(LogLevel.INFO, "recorded " + services.pluginName() + " in inventory plugins");
            } else {
                services.log(LogLevel.WARN, "could not record " + services.pluginName()
                        + " in inventory plugins (criu older than 4.1?): restore will not require it");
                LOG.debug("addInventoryPlugin returned false for {}", services.pluginName());
            }
            return added;
        }
    }

    /**
     * Reads inventory.img of {@code imagesDir}, applies {@code change} and writes the result back atomically;
     * fields this project does not know are preserved. Returns the written entry.
     */
    public static InventoryEntry rewriteInventory(Path imagesDir, UnaryOperator<InventoryEntry> change)
            throws ImageException {
        Path file = imagesDir.resolve(INVENTORY_IMG);
        InventoryEntry updated = change.apply(read(imagesDir));
        ImageIO.writeEntries(file, ImageIO.INVENTORY_MAGIC, List.of(updated));
        return updated;
    }

    /** {@link #rewriteInventory} setting the plugins list to exactly {@code plugins}. */
    public static InventoryEntry setPlugins(Path imagesDir, List<String> plugins) throws ImageException {
        return rewriteInventory(imagesDir, inv -> inv.toBuilder()
                .setPluginsEntry(PluginsEntry.newBuilder().addAllPlugins(plugins)).build());
    }

    /** {@link #rewriteInventory} removing the plugins field, as an older criu would have written it. */
    public static InventoryEntry clearPlugins(Path imagesDir) throws ImageException {
        return rewriteInventory(imagesDir, inv -> inv.toBuilder().clearPluginsEntry().build());
    }
}

package dev.criugpu.inventory.inspect;

import dev.criugpu.api.CriuPlugin;
import dev.criugpu.api.Plugins;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.InventoryPlugins;
import dev.criugpu.inventory.images.InventoryEntry;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceConfigurationError;
import java.util.stream.Stream;

/**
 * The GPU state files of an images directory, grouped by the plugin that wrote them. Plugins are recognised by
 * their file-name prefixes (those of the upstream plugins, so upstream images are described too).
 */
public final class GpuImages {
    /** Plugin name → file-name prefixes of the images it writes. */
    static final Map<String, List<String>> PREFIXES = Map.of(
            "cuda_plugin", List.of("cuda-plugin-"),
            InventoryPlugins.HOST_COPY_FORMAT, List.of("cuda-hostcopy-"),
            "amdgpu_plugin", List.of("amdgpu-kfd-", "amdgpu-renderD-", "amdgpu-pages-"));

    private GpuImages() {
    }

    public record File(String name, long bytes) {
    }

    /** One plugin's files; {@code listed}: the inventory names this plugin as required. */
    public record Group(String plugin, boolean listed, List<File> files) {
        public long totalBytes() {
            return files.stream().mapToLong(File::bytes).sum();
        }
    }

    /**
     * One group for every plugin known by prefix, installed on the class path, or listed in the inventory, in
     * that order; a group may be empty.
     */
    static List<Group> scan(Path dir, InventoryEntry inventory) throws ImageException {
        List<String> listed = inventory.hasPluginsEntry() ? inventory.getPluginsEntry().getPluginsList() : List.of();
        LinkedHashMap<String, List<File>> groups = new LinkedHashMap<>();
        for (String p : List.of("cuda_plugin", "amdgpu_plugin")) groups.put(p, new ArrayList<>());
        for (CriuPlugin p : installed()) groups.putIfAbsent(p.name(), new ArrayList<>());
        for (String p : listed) groups.putIfAbsent(p, new ArrayList<>());

        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.sorted().toList()) {
                String name = f.getFileName().toString();
                for (var e : PREFIXES.entrySet()) {
                    if (e.getValue().stream().anyMatch(name::startsWith)) {
                        groups.get(e.getKey()).add(new File(name, Checkpoint.size(f)));
                    }
                }
            }
        } catch (IOException e) {
            throw new ImageException(dir, "cannot list: " + e.getMessage(), e);
        }
        List<Group> out = new ArrayList<>();
        groups.forEach((plugin, files) -> out.add(new Group(plugin, listed.contains(plugin), List.copyOf(files))));
        return out;
    }

    private static List<CriuPlugin> installed() {
        try {
            return Plugins.all();
        } catch (RuntimeException | ServiceConfigurationError e) {
            return List.of(); // a broken plugin jar must not stop inspection
        }
    }
}

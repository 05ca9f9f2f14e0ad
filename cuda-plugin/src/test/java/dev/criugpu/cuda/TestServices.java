package dev.criugpu.cuda;

import dev.criugpu.api.CriuServices;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.LogLevel;
import dev.criugpu.api.Stage;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** criu's services as a dump or restore sees them: an images directory, the inventory call, a log kept in memory. */
public final class TestServices implements CriuServices {
    private final Stage stage;
    private final Path images;
    private final InventoryClaim claim;
    public final List<String> log = new ArrayList<>();
    int inventoryAdds;

    public TestServices(Stage stage, Path images, InventoryClaim claim) {
        this.stage = stage;
        this.images = images;
        this.claim = claim;
    }

    @Override public String pluginName() { return "cuda_plugin"; }
    @Override public Stage stage() { return stage; }
    @Override public boolean forced() { return false; }
    @Override public int criuHookCount() { return 13; }
    @Override public Path pluginDir() { return images; }
    @Override public boolean isLoggable(LogLevel level) { return true; }

    @Override
    public synchronized void log(LogLevel level, String message) {
        log.add(level + " " + message);
    }

    public synchronized List<String> errors() {
        return log.stream().filter(l -> l.startsWith("ERROR")).toList();
    }

    @Override public Optional<Integer> imageDirFd() { return Optional.empty(); }
    @Override public Optional<Path> imageDir() { return Optional.of(images); }

    @Override
    public boolean addInventoryPlugin() {
        inventoryAdds++;
        return true;
    }

    @Override public InventoryClaim inventoryClaim() { return claim; }
    @Override public boolean setCompelInterruptOnlyMode() { return true; }
}

package dev.criugpu.api;

import java.nio.file.Path;
import java.util.Optional;

/**
 * {@link CriuServices} outside criu (CLI, tests): logs to stderr above a threshold, and has no images
 * directory, no inventory and no criu functions.
 */
public final class StandaloneCriuServices implements CriuServices {
    private final String pluginName;
    private final Stage stage;
    private final LogLevel threshold;
    private final Path pluginDir;

    public StandaloneCriuServices(String pluginName, Stage stage, LogLevel threshold, Path pluginDir) {
        this.pluginName = pluginName;
        this.stage = stage;
        this.threshold = threshold;
        this.pluginDir = pluginDir;
    }

    @Override public String pluginName() { return pluginName; }
    @Override public Stage stage() { return stage; }
    @Override public boolean forced() { return false; }
    @Override public int criuHookCount() { return 0; }
    @Override public Path pluginDir() { return pluginDir; }
    @Override public boolean isLoggable(LogLevel level) { return level.id <= threshold.id; }

    @Override
    public void log(LogLevel level, String message) {
        if (isLoggable(level)) LogLines.of(pluginName, level, message).forEach(System.err::println);
    }

    @Override public Optional<Integer> imageDirFd() { return Optional.empty(); }
    @Override public Optional<Path> imageDir() { return Optional.empty(); }
    @Override public boolean addInventoryPlugin() { return false; }
    @Override public InventoryClaim inventoryClaim() { return InventoryClaim.NONE; }
    @Override public boolean setCompelInterruptOnlyMode() { return false; }
}

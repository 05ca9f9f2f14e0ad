package dev.criugpu.api;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Optional;

/**
 * What criu offers a plugin: its log, its images directory, the inventory handshake and its ptrace helpers
 * (DESIGN rule 8). Outside criu (CLI, tests) a standalone implementation logs to stderr and offers none of the
 * criu-only services.
 */
public interface CriuServices {

    String pluginName();

    Stage stage();

    /** The shim was asked to skip the hardware gate ({@code CRIU_GPU_PLUGIN_FORCE=1}). */
    boolean forced();

    /** Number of hooks the running criu knows (13 for criu 4.2); 0 when unknown. */
    int criuHookCount();

    /** The plugin directory criu loaded us from (holds {@code java/}). */
    Path pluginDir();

    boolean isLoggable(LogLevel level);

    /** One line into criu's own log (prefix and newline added). */
    void log(LogLevel level, String message);

    /** The images directory of this criu command, as an fd criu owns; empty outside criu. */
    Optional<Integer> imageDirFd();

    /** The images directory as a path (through /proc/self/fd); empty outside criu. */
    Optional<Path> imageDir();

    /**
     * Record in inventory.img that this dump holds this plugin's state, so a restore requires the plugin.
     * Returns false when the running criu has no such function (older than 4.1) or it failed.
     */
    boolean addInventoryPlugin();

    /** The restore-time inventory answer for this plugin, decided (and claimed) by the shim before Java ran. */
    InventoryClaim inventoryClaim();

    /** Make criu freeze with ptrace interrupts only (needed to wake one thread later); false if unavailable. */
    boolean setCompelInterruptOnlyMode();

    /** Address of another function criu exports, or empty ({@code compel_wait_task} and friends). */
    Optional<MemorySegment> criuFunction(String name);

    /**
     * Hands the shim native code to run for RESTORE_EXT_FILE and UPDATE_VMA_MAP inside criu's forked children
     * (C functions of the shapes in criu_gpu_shim.h, and their context); must be called before criu forks.
     * Returns false where there is no shim (standalone).
     */
    default boolean setChildExecutor(MemorySegment ctx, MemorySegment restoreExtFile, MemorySegment updateVmaMap) {
        return false;
    }
}

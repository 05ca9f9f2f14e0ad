package dev.criugpu.api;

import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.api.plan.Fdstore;

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

    /** Whether the test-only fault {@code CRIU_GPU_FAULT=<this plugin>:<fault>} is set (forced mode only). */
    default boolean faultInjected(String fault) {
        return Faults.injected(this, fault);
    }

    /**
     * This JVM runs in the shim's restore probe: a copy of criu, forked before criu forks anything, that exits once
     * the bootstrap has run {@link CriuPlugin#checkRestore} in place of init (DESIGN rule 1).
     */
    default boolean restoreCheckOnly() {
        return false;
    }

    /**
     * This restore init runs in criu after the restore probe ran {@link CriuPlugin#checkRestore} (DESIGN rule 1):
     * what the probe did once outside its own process (such as freeing the job's listen ports) is done.
     */
    default boolean afterRestoreProbe() {
        return false;
    }

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

    /**
     * Makes criu's process end with {@code status} (not 0) once criu has finished the command, everything after the
     * plugins' exit hook included (the tree left stopped with {@code -s} or resumed, criu's cleanup, the other
     * plugins' exit): for a dump criu completed that a plugin must still fail. criu's own failure status is kept.
     * Returns false where that cannot be done (outside criu, a shim of another build), true once it is arranged.
     */
    default boolean exitStatusAfterCleanup(int status) {
        return false;
    }

    /**
     * In the restore probe: the shim sets ns_last_pid to {@code lastPid} while criu's JVM starts after the probe, so
     * that its threads take the pids above it (DESIGN rule 3). False where there is no such shim or this is no probe.
     */
    default boolean parkRestorePidsAfter(long lastPid) {
        return false;
    }

    /** Make criu freeze with ptrace interrupts only (needed to wake one thread later); false if unavailable. */
    boolean setCompelInterruptOnlyMode();

    /** criu's fdstore, which every task criu forks can take fds from; empty outside criu and before criu 4.2. */
    default Optional<Fdstore> fdstore() {
        return Optional.empty();
    }

    /**
     * Hands the shim the plan its executor runs for RESTORE_EXT_FILE and UPDATE_VMA_MAP inside criu's forked
     * children; must be called before criu forks, and the plan kept open until the restore ends. Returns false where
     * there is no shim (standalone); throws, naming what is missing, when this criu cannot run plans (older than 4.2).
     */
    default boolean setChildExecutor(ChildPlan plan) {
        return false;
    }
}

package dev.criugpu.api;

import java.util.Set;

/**
 * A GPU plugin as criu sees it, found with {@link java.util.ServiceLoader}: one method per main-process {@link Hook},
 * each defaulting to {@link Errno#NOT_SUPPORTED}, which makes criu ask the next plugin. A hook reports failure by
 * returning a negative errno or by throwing; a throwable never reaches criu (the bootstrap turns it into one log line
 * and a negative errno).
 *
 * <p>Hooks run on criu's main thread, which is the thread that ptrace-seized the tasks.
 */
public interface CriuPlugin {

    /** The descriptor name criu knows, e.g. {@code cuda_plugin}; also the name in inventory.img. */
    String name();

    /**
     * Hooks to register with criu. The shim is built with the same set (native/Makefile asks {@link HookTable} for its
     * mask); bootstrap refuses a shim whose mask differs.
     */
    Set<Hook> hooks();

    /**
     * Called first, right after the JVM started and before criu's services are usable (no log, no calls into criu;
     * Java's first use of FFM is still to come): the moment to start, in the background, slow work that init will
     * need, so that it overlaps the rest of the bootstrap. What fails here is for init to report. On restore it runs
     * while the shim parks the next pid, like init: a thread it starts is one PidGuard counts (DESIGN rule 3).
     * {@code imagesDir}: criu's images directory, as init's {@link CriuServices#imageDir} will name it.
     */
    default void prepare(Stage stage, java.nio.file.Path pluginDir, java.util.Optional<java.nio.file.Path> imagesDir) {
    }

    /**
     * Links, loads or initialises what criu's main thread will soon need, on a thread of its own that nobody waits for
     * (only where there are CPUs to spare: {@link HookStubs#ahead()}), after the JVM's own first FFM uses were made:
     * whatever it has done by then the main thread need not do. Nothing here may fail the command or change state.
     */
    default void warmUp(Stage stage) {
    }

    /**
     * The command of a helper process that a dump of this plugin always starts ({@link HelperProcess#command}, with
     * {@link HelperProcess#CRIU_PID_WORD} for criu's pid; it finds criu's end at fd {@link HelperProcess#CHANNEL_FD}), or
     * empty. make-aot.sh writes it to {@code java/<name>.helper}, and the shim starts it before criu's JVM
     * ({@link HelperProcess#adoptPreStarted}).
     */
    default java.util.Optional<java.util.List<String>> earlyHelper(java.nio.file.Path pluginDir) {
        return java.util.Optional.empty();
    }

    /**
     * Called once the JVM serves this plugin in a criu command. Returns 0, or a negative errno to fail the
     * command (a restore that needs hardware this host lacks, say). A restore's init runs in criu after criu cloned
     * the restore's first task (POST_FORKING, DESIGN rule 1), where {@link #checkRestore} ran before in the restore
     * probe ({@link CriuServices#afterRestoreProbe}); with a criu older than 4.2 it runs alone, before any fork.
     */
    default int init(Stage stage, CriuServices services) {
        return 0;
    }

    /**
     * Runs in the restore probe, in place of init: a copy of criu, forked before criu forks anything, with a JVM of its
     * own, that exits once this returns (DESIGN rule 1). Decides whether this restore can be carried out here, and
     * refuses it (a negative errno, the reason logged) while the images and pids are untouched. Outside its own
     * process it does only what must happen before criu forks, once (freeing the job's listen ports); nothing it makes
     * (a plan, an fdstore entry, a file, a thread) lasts. criu's {@link #init} of the restore follows, in criu.
     */
    default int checkRestore(CriuServices services) {
        return 0;
    }

    /** criu's plugin exit: the command finished with {@code ret} (0 = success). Not called for pre-dump. */
    default void exit(Stage stage, int ret) {
    }

    /** For {@code criu-gpu doctor}: would this plugin be enabled on this host, and why (not). */
    Diagnosis diagnose();

    default int dumpExtFile(int fd, int id) {
        return Errno.NOT_SUPPORTED;
    }

    /** A mapping of {@code file} (criu's {@code stat} of it): 0 when it is this plugin's to restore. */
    default int handleDeviceVma(int fd, DeviceFile file) {
        return Errno.NOT_SUPPORTED;
    }

    default int resumeDevicesLate(int pid) {
        return Errno.NOT_SUPPORTED;
    }

    default int pauseDevices(int pid) {
        return Errno.NOT_SUPPORTED;
    }

    default int checkpointDevices(int pid) {
        return Errno.NOT_SUPPORTED;
    }

    /** criu 4.3 after every task's pages are written ({@code pid}: the tree's root); a failure fails the dump. */
    default int dumpDevicesLate(int pid) {
        return Errno.NOT_SUPPORTED;
    }

    /** criu 4.3 before the dumped tree is released; called again with the error when a plugin failed it. */
    default int dumpFinish(int ret) {
        return Errno.NOT_SUPPORTED;
    }
}

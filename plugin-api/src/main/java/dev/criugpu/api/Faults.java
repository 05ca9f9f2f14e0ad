package dev.criugpu.api;

/**
 * Test-only faults, honoured in forced mode alone ({@code CRIU_GPU_PLUGIN_FORCE=1}), so that what criu does with a
 * plugin's failure can be shown with real criu on a machine without GPUs. {@code CRIU_GPU_FAULT=<plugin>:<fault>}:
 * <ul>
 * <li>{@code resume-devices-late}: the plugin's device restore of every task fails in RESUME_DEVICES_LATE, and the
 * {@link RestoreFailure} policy applies to it.</li>
 * </ul>
 */
final class Faults {
    static final String VARIABLE = "CRIU_GPU_FAULT";

    private Faults() {
    }

    static boolean injected(CriuServices services, String fault) {
        String v = System.getenv(VARIABLE);
        return services.forced() && v != null && v.equals(services.pluginName() + ":" + fault);
    }

    /** RESUME_DEVICES_LATE as a failed device restore: the task is killed. */
    static int failResumeDevicesLate(int pid) {
        throw RestoreFailure.killTask(pid, "device restore failed (fault injected by " + VARIABLE + ")");
    }
}

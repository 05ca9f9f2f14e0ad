package dev.criugpu.api;

/**
 * Test-only faults, honoured in forced mode alone ({@code CRIU_GPU_PLUGIN_FORCE=1}), so that what criu does with a
 * plugin's failure can be shown with real criu on a machine without GPUs. {@code CRIU_GPU_FAULT=<plugin>:<fault>}:
 * <ul>
 * <li>{@code resume-devices-late}: the plugin's device restore of every task fails in RESUME_DEVICES_LATE, and the
 * {@link RestoreFailure} policy applies to it.</li>
 * <li>{@code stall-before-checkpoint}, {@code stall-after-exit}: criu is held (up to {@link #STALL_MS}) at the first
 * CHECKPOINT_DEVICES, with the tree locked and frozen, or right after the plugin's dump exit, before criu kills the
 * tree: points at which a test kills criu to see what its tasks become. {@code CRIU_GPU_FAULT_STALL_MS} shortens the
 * hold (a test that kills something else at that point need not wait the whole of it).</li>
 * <li>{@code stall-restore-probe}: the restore probe (the plugin's restore init in a copy of criu, before criu forks)
 * is held like the stalls above: a hung driver or NVML call, which the shim's {@code CRIU_GPU_PROBE_TIMEOUT_S} ends.</li>
 * <li>{@code no-restop-grace} (cuda_plugin): criu told to stop does not wait at all for a woken restore thread to
 * stop again, as if it were inside a long driver call: the CUDA agent then gives its signal mask back.</li>
 * </ul>
 */
final class Faults {
    static final String VARIABLE = "CRIU_GPU_FAULT";
    static final long STALL_MS = 120_000;
    private static boolean stalledBeforeCheckpoint;

    private Faults() {
    }

    static boolean injected(CriuServices services, String fault) {
        String v = System.getenv(VARIABLE);
        return services.forced() && v != null && v.equals(services.pluginName() + ":" + fault);
    }

    /** Holds criu at a named point once, logging the line a test waits for; ends early on a stop signal. */
    static void stall(CriuServices services, String point) {
        if (!injected(services, "stall-" + point)) return;
        if (point.equals("before-checkpoint")) {
            if (stalledBeforeCheckpoint) return;
            stalledBeforeCheckpoint = true;
        }
        services.log(LogLevel.INFO, "fault injected by " + VARIABLE + ": criu stalls " + point.replace('-', ' '));
        long deadline = System.nanoTime() + stallMs() * 1_000_000;
        while (System.nanoTime() < deadline && Interrupts.pendingStop().isEmpty()) {
            try {
                Thread.sleep(Interrupts.SLICE_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    static long stallMs() {
        try {
            String v = System.getenv(VARIABLE + "_STALL_MS");
            return v == null ? STALL_MS : Math.min(STALL_MS, Math.max(0, Long.parseLong(v.strip())));
        } catch (NumberFormatException e) {
            return STALL_MS;
        }
    }

    /** RESUME_DEVICES_LATE as a failed device restore: the task is killed. */
    static int failResumeDevicesLate(int pid) {
        throw RestoreFailure.killTask(pid, "device restore failed (fault injected by " + VARIABLE + ")");
    }
}

package dev.criugpu.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The debug line a plugin logs into criu's log each time a hook reaches Java. */
public final class HookTrace {
    public static final String CUDA = "cuda_plugin";
    public static final String AMDGPU = "amdgpu_plugin";
    public static final String[] PLUGINS = {CUDA, AMDGPU};

    private HookTrace() {
    }

    /** e.g. {@code cuda_plugin: hook PAUSE_DEVICES(pid=42) entered Java}. */
    public static String line(String plugin, String hook, String args) {
        return plugin + ": hook " + hook + "(" + args + ") entered Java";
    }

    public static String pid(int pid) {
        return "pid=" + pid;
    }

    public static String exit(int stage, int ret) {
        return "stage=" + stage + ", ret=" + ret;
    }

    public static boolean anyPluginTraced(CriuRun run, String hook, String args) {
        for (String p : PLUGINS) {
            if (run.log().contains(line(p, hook, args))) return true;
        }
        return false;
    }

    /** Asserts that {@code plugin} traced {@code hook(args)} in the run's log. */
    public static void assertTraced(CriuRun run, String plugin, String hook, String args) {
        String expected = line(plugin, hook, args);
        assertTrue(run.log().contains(expected), "criu log lacks '" + expected + "'; trace lines:\n"
                + String.join("\n", run.logLinesContaining("entered Java")) + "\n--- log tail\n" + run.logTail(40));
    }

    /**
     * Asserts that a plugin traced RESUME_DEVICES_LATE for {@code pid}: both plugins register it, and criu stops
     * at the first one that does not answer -ENOTSUP.
     */
    public static void assertResumedLate(CriuRun restore, int pid) {
        assertTrue(anyPluginTraced(restore, "RESUME_DEVICES_LATE", pid(pid)),
                "no plugin traced RESUME_DEVICES_LATE(pid=" + pid + "), log:\n" + restore.logTail(60));
    }
}

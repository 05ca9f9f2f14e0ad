package dev.criugpu.it;

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
}

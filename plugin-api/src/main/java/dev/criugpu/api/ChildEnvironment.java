package dev.criugpu.api;

import java.util.Arrays;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The environment of every program the plugins start as root (the CUDA agent, through the launcher, which builds the
 * same in C: native/launch/helper_launch.c; cuda-checkpoint; nvidia-smi): named variables only. Anything else of
 * criu's could change what the dynamic loader, glibc or the JVM load or do (LD_LIBRARY_PATH, GLIBC_TUNABLES,
 * GCONV_PATH, LOCPATH, JAVA_TOOL_OPTIONS, ...). What they need: PATH, where the agent looks for cuda-checkpoint as
 * criu's JVM does (it runs only one that passes the trust check), kept to its absolute folders; and a fixed locale.
 */
public final class ChildEnvironment {
    /** Where there is no absolute folder in the caller's PATH. */
    public static final String DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    public static final String LOCALE = "C.UTF-8";

    private ChildEnvironment() {
    }

    /** The environment of a program started from one whose environment is {@code parent}. */
    public static Map<String, String> of(Map<String, String> parent) {
        String path = Arrays.stream(parent.getOrDefault("PATH", "").split(":")).filter(d -> d.startsWith("/"))
                .collect(Collectors.joining(":"));
        return Map.of("PATH", path.isEmpty() ? DEFAULT_PATH : path, "LC_ALL", LOCALE);
    }

    /** {@code pb} with this process's environment replaced by {@link #of} it. */
    public static ProcessBuilder applyTo(ProcessBuilder pb) {
        Map<String, String> env = pb.environment();
        Map<String, String> kept = of(env);
        env.clear();
        env.putAll(kept);
        return pb;
    }
}

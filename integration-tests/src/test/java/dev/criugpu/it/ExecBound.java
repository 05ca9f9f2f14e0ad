package dev.criugpu.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * How long a command of the tests may run, and which log files explain it when it runs longer (shell globs, read
 * where the command runs: criu's dump.log, podman's). Every command a test runs has one: a criu that hangs fails its
 * test, with its output, these logs and the threads' states, and is killed, instead of holding the run for good.
 */
public record ExecBound(Duration limit, List<String> logs) {
    /**
     * Any command in a container: criu's dump or restore of the test workloads takes seconds, with the plugins
     * forced (the JVM starts inside criu) up to ~20 s on 2 busy cores; podman, containerd's node script and dpkg
     * take about as long.
     */
    public static final ExecBound DEFAULT = of(Duration.ofSeconds(180));

    public ExecBound {
        logs = List.copyOf(logs);
    }

    public static ExecBound of(Duration limit) {
        return new ExecBound(limit, List.of());
    }

    /** The same bound; on timeout the last lines of each file matching {@code globs} are shown too. */
    public ExecBound showingLogs(String... globs) {
        List<String> all = new ArrayList<>(logs);
        all.addAll(List.of(globs));
        return new ExecBound(limit, all);
    }

    /** The same logs, another limit. */
    public ExecBound within(Duration other) {
        return new ExecBound(other, logs);
    }

    public String describe() {
        return limit.toSeconds() + " s";
    }
}

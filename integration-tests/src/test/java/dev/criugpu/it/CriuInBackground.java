package dev.criugpu.it;

import java.time.Duration;

/**
 * A {@link CriuCommand} started in the background of a container, so that a test can signal or kill criu while it
 * runs. criu runs with SIGINT at its default action, as under a user's terminal (a background job of a shell would
 * ignore it); its parent, a subshell, waits for it and records in {@code dir}: {@code criu.pid}, then, once criu has
 * ended, {@code criu.end} (nanoseconds since the epoch, the container's clock) and {@code criu.status} (its exit
 * status; 128+N when signal N ended it). {@link #signal} records {@code criu.signalled} by the same clock.
 */
public final class CriuInBackground {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(10);
    private static final String LAUNCHER = """
            d="$1"; line="$2"
            rm -f "$d"/criu.*
            (
                env --default-signal=INT sh -c "$line" >"$d/criu.out" 2>&1 &
                echo $! >"$d/criu.pid.new" && mv "$d/criu.pid.new" "$d/criu.pid"
                wait $!
                s=$?
                date +%s%N >"$d/criu.end"
                echo $s >"$d/criu.status.new" && mv "$d/criu.status.new" "$d/criu.status"
            ) </dev/null >/dev/null 2>&1 &
            """;

    private final CriuContainer container;
    private final CriuCommand command;
    private final String dir;
    public final int pid;

    private CriuInBackground(CriuContainer container, CriuCommand command, String dir, int pid) {
        this.container = container;
        this.command = command;
        this.dir = dir;
        this.pid = pid;
    }

    /** Starts {@code command}; its records go to {@code dir} (created). */
    public static CriuInBackground start(CriuContainer container, CriuCommand command, String dir) {
        container.exec("mkdir", "-p", dir).orFail();
        container.exec("sh", "-c", LAUNCHER, "criu-launcher", dir, command.shellLine()).orFail();
        String pidFile = dir + "/criu.pid";
        Eventually.await("criu's pid in " + pidFile, START_TIMEOUT, () -> container.fileExists(pidFile));
        return new CriuInBackground(container, command, dir, Integer.parseInt(container.readFile(pidFile).strip()));
    }

    /** Waits until criu's log has a line containing {@code text}; fails early if criu ends first. */
    public void awaitLog(String text, Duration timeout) {
        Eventually.await("criu's log to say '" + text + "'", timeout, () -> {
            if (container.exec("grep", "-qF", "--", text, command.logPath()).succeeded()) return true;
            if (ended()) throw new AssertionError("criu ended (status " + status() + ") before its log said '" + text
                    + "'\n--- log tail\n" + run().logTail(40));
            return false;
        });
    }

    /** Sends {@code signal} (a kill(1) name: INT, KILL) to criu, noting the time first. */
    public void signal(String signal) {
        container.sh("date +%s%N >" + dir + "/criu.signalled && kill -" + signal + " " + pid).orFail();
    }

    public boolean ended() {
        return container.fileExists(dir + "/criu.status");
    }

    /** Waits until criu's parent saw it end; returns its exit status. */
    public int awaitEnd(Duration timeout) {
        Eventually.await("criu " + pid + " to end", timeout, this::ended,
                () -> "criu alive: " + container.pidInUse(pid) + "\n--- log tail\n" + run().logTail(20));
        return status();
    }

    private int status() {
        return Integer.parseInt(container.readFile(dir + "/criu.status").strip());
    }

    /** From {@link #signal} to the end of criu as its parent saw it. */
    public Duration endedAfterSignal() {
        long sent = Long.parseLong(container.readFile(dir + "/criu.signalled").strip());
        long end = Long.parseLong(container.readFile(dir + "/criu.end").strip());
        return Duration.ofNanos(end - sent);
    }

    /** What criu has written so far: its log, and once it ended its status and output. */
    public CriuRun run() {
        boolean ended = ended();
        CommandResult r = new CommandResult(command.shellLine(), ended ? status() : -1,
                container.readFileIfExists(dir + "/criu.out"), ended ? "" : "(criu still runs)");
        return new CriuRun(r, container.readFileIfExists(command.logPath()));
    }

    /** Cleanup: kills criu if it still runs. */
    public void kill() {
        if (!ended()) container.exec("kill", "-9", Integer.toString(pid));
    }
}

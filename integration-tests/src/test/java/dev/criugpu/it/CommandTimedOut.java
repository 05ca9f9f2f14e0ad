package dev.criugpu.it;

import java.util.List;

/**
 * A command ran past its {@link ExecBound} and was killed. The message's first line names the command and the bound;
 * then come its output so far, the tails of the bound's logs and every thread's state, wait channel and tracer where
 * it ran (a hung criu waits in wait4 for a task to trap, or a task sits in ptrace_stop: the states show which), all
 * gathered before the kill.
 */
public final class CommandTimedOut extends AssertionError {
    /**
     * sh: one line per thread of /proc, "pid tid state wchan tracer=PID command"; given pids as arguments, only
     * theirs; never its own. The idea of integration-tests/cri/node.sh's {@code logs}, for any container or the host.
     */
    static final String THREADS = """
            echo "pid tid state wchan tracer command"
            for t in /proc/[0-9]*/task/[0-9]*; do
                p=${t#/proc/}; p=${p%%/*}
                [ "$p" = $$ ] && continue
                if [ $# -gt 0 ]; then case " $* " in *" $p "*) ;; *) continue ;; esac; fi
                printf '%s %s %s %s tracer=%s %s\\n' "$p" "${t##*/}" "$(sed 's/.*) \\(.\\).*/\\1/' "$t/stat" 2>/dev/null)" \\
                    "$(cat "$t/wchan" 2>/dev/null)" "$(sed -n 's/^TracerPid:\\t//p' "$t/status" 2>/dev/null)" \\
                    "$(tr '\\0\\n' '  ' <"$t/cmdline" 2>/dev/null | cut -c1-120)"
            done
            """;
    private static final int LOG_LINES = 60;

    public final String command;
    public final ExecBound bound;

    CommandTimedOut(String command, ExecBound bound, String stdout, String stderr, String diagnostics) {
        super("`" + command + "` still ran after " + bound.describe() + ": killed"
                + "\n--- stdout so far\n" + stdout + "\n--- stderr so far\n" + stderr + "\n" + diagnostics);
        this.command = command;
        this.bound = bound;
    }

    /** The first line of the message: the command and its bound. */
    public String summary() {
        return getMessage().lines().findFirst().orElse("");
    }

    /** sh: the last lines of each file matching {@code globs}, each under a header naming it. */
    static String logTails(List<String> globs) {
        if (globs.isEmpty()) return "true";
        return "for f in " + String.join(" ", globs) + "; do [ -f \"$f\" ] || continue; echo \"--- $f (last "
                + LOG_LINES + " lines)\"; tail -n " + LOG_LINES + " \"$f\"; done";
    }
}

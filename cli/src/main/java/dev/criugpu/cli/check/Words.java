package dev.criugpu.cli.check;

import dev.criugpu.cli.check.ProcFs.Task;

import java.util.Collection;
import java.util.stream.Collectors;

/** How the report names things: counts, pids, tasks and sizes. */
final class Words {
    static final long MIB = 1L << 20;

    private Words() {
    }

    static String plural(long n, String word) {
        return n + " " + word + (n == 1 ? "" : word.endsWith("s") ? "es" : "s");
    }

    /** "pid 12" or "pids 12, 13". */
    static String pids(Collection<Integer> pids) {
        return (pids.size() == 1 ? "pid " : "pids ") + pids.stream().map(String::valueOf).collect(Collectors.joining(", "));
    }

    static String who(Task t) {
        return "pid " + t.pid() + " (" + t.command() + ")";
    }

    static String shortWho(Task t) {
        return t.pid() + " " + t.comm();
    }

    static String mib(long bytes) {
        if (bytes < 1024) return bytes + " B";
        if (bytes < MIB) return String.format("%.1f KiB", bytes / 1024.0);
        return String.format("%.1f MiB", bytes / (double) MIB);
    }
}

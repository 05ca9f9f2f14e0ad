package dev.criugpu.api.sys;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Whether a process still runs, from its /proc/PID/stat: the state letter and the start time (clock ticks since
 * boot). A zombie (Z) or dead (X) process has ended even though its pid is still taken — {@link ProcessHandle#isAlive}
 * says true for a zombie, and where nobody reaps (a container whose init waits for nothing) one stays so for ever. A
 * pid taken over by a later process is told apart by its start time.
 */
public record ProcStat(char state, long startTime) {

    /** Not a zombie and not dead. */
    public boolean alive() {
        return state != 'Z' && state != 'X' && state != 'x';
    }

    /** Parses a /proc/PID/stat line (the command name may hold spaces and parentheses). */
    public static ProcStat parse(String line) {
        int close = line.lastIndexOf(')');
        if (close < 0 || close + 2 > line.length()) throw new IllegalArgumentException("not a /proc/PID/stat line: " + line);
        String[] f = line.substring(close + 2).trim().split(" ");
        // f[0] is field 3 (state); starttime is field 22, i.e. f[19]
        if (f.length < 20 || f[0].isEmpty()) throw new IllegalArgumentException("short /proc/PID/stat line: " + line);
        try {
            return new ProcStat(f[0].charAt(0), Long.parseLong(f[19]));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a /proc/PID/stat line: " + line);
        }
    }

    /** The process's stat now; empty when the pid is free (or /proc cannot say). */
    public static Optional<ProcStat> of(long pid) {
        try {
            return Optional.of(parse(Files.readString(Path.of("/proc/" + pid + "/stat"))));
        } catch (IOException | IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    /** Whether some process runs under {@code pid} (a zombie does not). */
    public static boolean alive(long pid) {
        return of(pid).map(ProcStat::alive).orElse(false);
    }

    /** Whether the very process that started at {@code startTime} still runs under {@code pid}. */
    public static boolean alive(long pid, long startTime) {
        return of(pid).map(s -> s.alive() && s.startTime() == startTime).orElse(false);
    }
}

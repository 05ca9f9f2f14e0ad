package dev.criugpu.cuda.proc;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/** The little the plugin reads from /proc about a task. */
public final class Procs {
    private Procs() {
    }

    /** State letter and start time (clock ticks since boot) of /proc/PID/stat. */
    public record Stat(char state, long startTime) {
        /** Not a zombie and not dead. */
        public boolean alive() {
            return state != 'Z' && state != 'X' && state != 'x';
        }
    }

    /** Parses a /proc/PID/stat line (the command name may hold spaces and parentheses). */
    public static Stat parseStat(String line) {
        int close = line.lastIndexOf(')');
        if (close < 0) throw new IllegalArgumentException("not a /proc/PID/stat line: " + line);
        String[] f = line.substring(close + 2).trim().split(" ");
        // f[0] is field 3 (state); starttime is field 22, i.e. f[19]
        if (f.length < 20) throw new IllegalArgumentException("short /proc/PID/stat line: " + line);
        return new Stat(f[0].charAt(0), Long.parseLong(f[19]));
    }

    public static Optional<Stat> stat(int pid) {
        try {
            return Optional.of(parseStat(Files.readString(Path.of("/proc/" + pid + "/stat"))));
        } catch (IOException | IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    public static boolean alive(int pid) {
        return stat(pid).map(Stat::alive).orElse(false);
    }
}

package dev.criugpu.api.sys;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The NUL-separated entries of /proc/PID/environ and /proc/PID/cmdline, read up to a bound. Their length is the
 * process owner's to choose (hundreds of MiB with a large stack limit) and the plugins and {@code criu-gpu check} read
 * them as root: the bounds keep that cheap, and {@link #cut()} says when the rest was not read.
 *
 * @param entries the entries within the bound (an entry the bound cut in two is left out)
 * @param cut whether the file held more than the bound
 */
public record ProcEntries(List<String> entries, boolean cut) {
    /** Bounds for environ and cmdline: far above what programs use, far below what a user can make. */
    public static final int ENVIRON_LIMIT = 1 << 20;
    public static final int CMDLINE_LIMIT = 256 << 10;

    public ProcEntries {
        entries = List.copyOf(entries);
    }

    /** The entries of {@code file} within its first {@code limit} bytes. */
    public static ProcEntries read(Path file, int limit) throws IOException {
        byte[] head;
        boolean cut;
        try (InputStream in = Files.newInputStream(file)) {
            head = in.readNBytes(limit);
            cut = in.read() >= 0;
        }
        List<String> out = new ArrayList<>(List.of(new String(head, StandardCharsets.UTF_8).split("\0")));
        if (cut && head.length > 0 && head[head.length - 1] != 0 && !out.isEmpty()) out.removeLast();
        return new ProcEntries(out, cut);
    }

    /** {@code NAME=value} entries as a map (the first of a name wins, as getenv finds it). */
    public Map<String, String> asEnvironment() {
        Map<String, String> env = new java.util.LinkedHashMap<>();
        for (String kv : entries) {
            int eq = kv.indexOf('=');
            if (eq > 0) env.putIfAbsent(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return env;
    }
}

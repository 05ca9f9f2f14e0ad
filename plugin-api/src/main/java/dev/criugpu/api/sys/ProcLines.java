package dev.criugpu.api.sys;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * A /proc text file read line by line in constant memory. /proc/PID/maps has a line per mapping (up to
 * vm.max_map_count, 65530 by default) naming a file of the process owner's choosing: 242 MB of it were read whole by
 * root's {@code criu-gpu check} (610 MB of heap) and ran criu's JVM (64 MiB) out of memory. So callers keep only what
 * they need of each line. A file name is bytes, not UTF-8: a malformed sequence becomes U+FFFD, never an exception
 * (the JDK's line readers throw, which would have let a file's name fail a dump).
 */
public final class ProcLines {
    /**
     * A maps line is about 80 bytes of fields and a path the kernel writes without a bound (PATH_MAX limits only what
     * a system call takes); its first 8 KiB hold the fields and every name the plugins look for.
     */
    public static final int MAPS_LINE_LIMIT = 8 << 10;

    private ProcLines() {
    }

    /**
     * Gives {@code sink} each line of {@code file} without its newline, a line longer than {@code limit} bytes cut to
     * its first {@code limit} (the rest is skipped unread into memory).
     */
    public static void forEach(Path file, int limit, Consumer<String> sink) throws IOException {
        byte[] line = new byte[limit];
        byte[] chunk = new byte[64 << 10];
        int len = 0;
        boolean open = false; // bytes of a line not yet given
        try (InputStream in = Files.newInputStream(file)) {
            for (int n; (n = in.read(chunk)) > 0; ) {
                for (int from = 0; from < n; ) {
                    int end = from;
                    while (end < n && chunk[end] != '\n') end++;
                    int take = Math.min(end - from, limit - len);
                    System.arraycopy(chunk, from, line, len, take);
                    len += take;
                    open |= end > from;
                    if (end == n) break;
                    sink.accept(new String(line, 0, len, StandardCharsets.UTF_8));
                    len = 0;
                    open = false;
                    from = end + 1;
                }
            }
        }
        if (open) sink.accept(new String(line, 0, len, StandardCharsets.UTF_8));
    }
}

package dev.criugpu.api.sys;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A /proc/PID/maps of about 200 MB, as a process can make with 65530 mappings of files with long names, followed by
 * the lines that hold a test's answer. Every other line names a file whose path contains "/dev/nvidia" (so a reader
 * that keeps such lines keeps them all) and differs from every other (so does one that keeps distinct paths), yet is
 * no device, library or shared file any reader looks for.
 */
public final class HugeMaps {
    public static final long SIZE = 200L << 20;
    private static final String LONG_NAME = "x".repeat(3000);

    private HugeMaps() {
    }

    /** Writes {@code file}: the decoy lines up to {@link #SIZE}, then {@code tail} (whole lines). */
    public static Path write(Path file, String tail) throws IOException {
        long written = 0;
        try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.US_ASCII)) {
            for (long i = 0; written < SIZE; i++) {
                long start = 0x10000000L + i * 0x1000;
                String line = Long.toHexString(start) + "-" + Long.toHexString(start + 0x1000) + " r--p 00000000 08:01 "
                        + (1000 + i) + " /home/user/dev/nvidia-lookalike/" + i + "/" + LONG_NAME + "\n";
                w.write(line);
                written += line.length();
            }
            w.write(tail);
        }
        return file;
    }
}

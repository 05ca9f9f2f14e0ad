package dev.criugpu.inventory.bench;

import dev.criugpu.inventory.RawPages;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

/**
 * Benchmark driver for bench/raw-pages-bench.sh (not a test): {@code write FILE MIB} streams MIB MiB from a
 * 64 MiB native buffer through {@link RawPages.Writer} (commit = fsync + rename); {@code read FILE} streams the
 * file back into that buffer through {@link RawPages.Reader}. Prints MiB/s measured inside the JVM.
 */
public final class RawPagesBench {
    private static final long BUF = 64L << 20;

    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[1]);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(BUF, 4096);
            for (long i = 0; i < BUF / 8; i++) buf.setAtIndex(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
            long start = System.nanoTime();
            long bytes = 0;
            if (args[0].equals("write")) {
                long total = Long.parseLong(args[2]) << 20;
                try (RawPages.Writer w = RawPages.create(file)) {
                    while (bytes < total) {
                        long n = Math.min(BUF, total - bytes);
                        w.write(buf.asSlice(0, n).asByteBuffer());
                        bytes += n;
                    }
                    w.commit();
                }
            } else {
                try (RawPages.Reader r = RawPages.open(file)) {
                    while (bytes < r.size()) {
                        long n = Math.min(BUF, r.size() - bytes);
                        r.readFully(buf.asSlice(0, n).asByteBuffer());
                        bytes += n;
                    }
                }
            }
            double s = (System.nanoTime() - start) / 1e9;
            System.out.printf("%s %d MiB in %.2f s = %.0f MiB/s (inside the JVM)%n", args[0], bytes >> 20, s,
                    (bytes >> 20) / s);
        }
    }
}

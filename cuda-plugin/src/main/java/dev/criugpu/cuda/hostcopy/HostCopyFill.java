package dev.criugpu.cuda.hostcopy;

import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.sys.TaskMemory;
import dev.criugpu.cuda.image.CudaHostCopyEntry;
import dev.criugpu.cuda.image.CudaHostCopyRange;
import dev.criugpu.inventory.Pagemap;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Puts a task's host copy back ({@link HostCopyImages}) while criu holds the restored task stopped, before the
 * driver's restore reads it: the pages file is mapped here and copied into the task in 64 MiB pieces by several
 * threads at once, each piece faulting in the task's huge pages (its VMAs were given MADV_HUGEPAGE).
 */
public final class HostCopyFill implements AutoCloseable {
    static final long PIECE = 64L << 20;
    private final ExecutorService pool;

    /** @param threads how many copies run at once (for all tasks of the restore together) */
    public HostCopyFill(int threads) {
        this.pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "criu-gpu-host-copy");
            t.setDaemon(true);
            return t;
        });
    }

    /** The restore's pool size: one thread per CPU, at most 16 (more did not copy faster on a 16-core H100 host). */
    public static int defaultThreads() {
        return Math.max(1, Math.min(16, Runtime.getRuntime().availableProcessors()));
    }

    /**
     * Copies every range of {@code record} into task {@code pid} (its real pid) and returns the bytes copied.
     *
     * @throws IOException naming the pid, the file or the address, where the file is missing or short or the task
     *     lacks a range (the restore must fail then: the driver would restore what the task holds there)
     */
    public long fill(Path dir, CudaHostCopyEntry record, int pid) throws IOException {
        Path file = Pagemap.pagesFile(dir, record.getPagesId());
        try (FileChannel ch = ImageFiles.openForReading(dir, file.getFileName().toString()); Arena arena = Arena.ofShared()) {
            long size = ch.size();
            long total = 0;
            for (CudaHostCopyRange r : record.getRangesList()) {
                if (r.getOffset() + r.getLength() > size) {
                    throw new IOException(file + ": holds " + size + " bytes, but the host copy of pid " + pid
                            + " needs " + r.getLength() + " at offset " + r.getOffset());
                }
                total += r.getLength();
            }
            if (total == 0) return 0;
            MemorySegment pages = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            List<Future<?>> pieces = new ArrayList<>();
            for (CudaHostCopyRange r : record.getRangesList()) {
                for (long done = 0; done < r.getLength(); done += PIECE) {
                    long n = Math.min(PIECE, r.getLength() - done);
                    MemorySegment from = pages.asSlice(r.getOffset() + done, n);
                    long to = r.getVaddr() + done;
                    pieces.add(pool.submit(() -> TaskMemory.write(pid, from, to)));
                }
            }
            IOException failure = null;
            for (Future<?> f : pieces) {
                try {
                    f.get();
                } catch (ExecutionException e) {
                    if (failure == null) failure = new IOException(e.getCause().getMessage(), e.getCause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    if (failure == null) failure = new IOException("pid " + pid + ": interrupted while its host copy was put back");
                }
            }
            if (failure != null) throw failure;
            return total;
        }
    }

    @Override
    public void close() {
        pool.shutdownNow();
    }
}

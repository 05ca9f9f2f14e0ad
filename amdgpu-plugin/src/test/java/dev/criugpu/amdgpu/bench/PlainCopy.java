package dev.criugpu.amdgpu.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The baseline: the same bytes moved with nothing but mmap, memcpy and FileChannel I/O, one platform thread per
 * GPU like the plugin. Dump: mmap each BO's memfd, memcpy a buffer-full into a malloc'd buffer, write it to the
 * GPU's file (8-byte length header first). Refill: read a buffer-full of the pages file payload, memcpy it into an
 * mmap of the target memfd. The buffer has the plugin's bounce-buffer size.
 */
final class PlainCopy {
    /** One GPU's BOs in payload order. */
    record GpuBos(String fileName, List<BenchBo> bos) {
        long total() {
            return bos.stream().mapToLong(BenchBo::size).sum();
        }
    }

    private PlainCopy() {
    }

    static void dump(List<GpuBos> gpus, Path dir, long bufferBytes) {
        perGpu(gpus, g -> {
            MemorySegment buf = PlainLibc.malloc(bufferBytes);
            try (FileChannel ch = FileChannel.open(dir.resolve(g.fileName()), StandardOpenOption.CREATE,
                    StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                writeFully(ch, ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(0, g.total()));
                for (BenchBo bo : g.bos()) {
                    MemorySegment src = PlainLibc.map(bo.sourceFd(), bo.size(), false);
                    try {
                        for (long done = 0; done < bo.size(); done += bufferBytes) {
                            long n = Math.min(bufferBytes, bo.size() - done);
                            PlainLibc.memcpy(buf, src.asSlice(done), n);
                            writeFully(ch, buf.asSlice(0, n).asByteBuffer());
                        }
                    } finally {
                        PlainLibc.unmap(src);
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } finally {
                PlainLibc.free(buf);
            }
        });
    }

    static void refill(List<GpuBos> gpus, Path pagesDir, long bufferBytes) {
        perGpu(gpus, g -> {
            MemorySegment buf = PlainLibc.malloc(bufferBytes);
            try (FileChannel ch = FileChannel.open(pagesDir.resolve(g.fileName()), StandardOpenOption.READ)) {
                long pos = 8;
                for (BenchBo bo : g.bos()) {
                    MemorySegment dst = PlainLibc.map(bo.targetFd(), bo.size(), true);
                    try {
                        for (long done = 0; done < bo.size(); done += bufferBytes) {
                            long n = Math.min(bufferBytes, bo.size() - done);
                            ByteBuffer into = buf.asSlice(0, n).asByteBuffer();
                            while (into.hasRemaining()) {
                                int r = ch.read(into, pos);
                                if (r < 0) throw new IOException(g.fileName() + ": unexpected end of file");
                                pos += r;
                            }
                            PlainLibc.memcpy(dst.asSlice(done), buf, n);
                        }
                    } finally {
                        PlainLibc.unmap(dst);
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } finally {
                PlainLibc.free(buf);
            }
        });
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) ch.write(b);
    }

    /** Runs {@code work} for every GPU on its own platform thread; rethrows the first failure. */
    private static void perGpu(List<GpuBos> gpus, Consumer<GpuBos> work) {
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (GpuBos g : gpus) {
            threads.add(Thread.ofPlatform().name("plain-" + g.fileName()).start(() -> {
                try {
                    work.accept(g);
                } catch (Throwable t) {
                    failures.add(t);
                }
            }));
        }
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
        if (!failures.isEmpty()) throw new IllegalStateException("baseline copy failed", failures.getFirst());
    }
}

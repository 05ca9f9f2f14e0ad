package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.dump.MaxBufferSize;
import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.images.PagesFileReader;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.images.proto.KfdDeviceEntry;
import dev.criugpu.amdgpu.kfd.BoBucket;
import dev.criugpu.amdgpu.sys.SdmaCopier;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.Interrupts;
import dev.criugpu.api.sys.Syscalls;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Refills restored BOs in criu's main process: for one refill request, each checkpointed GPU's BOs are written
 * from {@code amdgpu-pages-<id>-<user gpu %04x>.img} into the dma-bufs the restored task sent, through the SDMA
 * engine of the local GPU it was mapped to. One platform thread per local GPU does that GPU's work for every
 * request in arrival order, so GPUs run in parallel and requests from several tasks queue up per GPU. The threads
 * are started by the constructor, before criu forks the tasks whose requests they serve: a thread started later
 * could take a pid criu is about to restore. The request's fds are closed once its copies are done (or failed).
 */
public final class BoRefiller implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(BoRefiller.class);
    /** How often {@link #close} looks for a stop signal while copies still run. */
    private static final long STOP_POLL_MS = 20;

    private final Syscalls sys;
    private final Path imagesDir;
    private final long maxBufferSize;
    private final Map<Integer, ExecutorService> workers = new HashMap<>();

    /** Starts a worker for each of {@code localGpus}, the local GPU ids the restore maps to. */
    public BoRefiller(Syscalls sys, Path imagesDir, long maxBufferSize, Set<Integer> localGpus) {
        this.sys = sys;
        this.imagesDir = imagesDir;
        this.maxBufferSize = maxBufferSize;
        for (int gpu : localGpus) workers.put(gpu, startWorker(gpu));
    }

    private static ExecutorService startWorker(int gpu) {
        ExecutorService worker = Executors.newSingleThreadExecutor(
                Thread.ofPlatform().name(String.format("amdgpu-refill-%04x", gpu)).daemon().factory());
        try {
            // a pool starts its thread with the first task: start it now
            worker.submit(() -> { }).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            worker.close();
            throw new CriuException(Errno.EINTR, "interrupted while starting the refill worker of GPU "
                    + String.format("0x%04x", gpu));
        } catch (ExecutionException e) {
            worker.close();
            throw new IllegalStateException(e.getCause());
        }
        return worker;
    }

    /** A BO to fill: its place in the image and in its GPU's pages payload, and the fd it arrived as. */
    private record Fill(int index, KfdBoEntry bo, long payloadOffset, int fd) {
    }

    /**
     * Queues the copies of {@code request} (already checked against {@code kfd}); the future fails with one line
     * naming the pages file, BO and GPU.
     */
    public synchronized CompletableFuture<Void> refill(RefillRequest request, CriuKfd kfd, RestorePlan plan) {
        Map<Integer, Integer> fdOf = new HashMap<>();
        for (int i = 0; i < request.boIndices().length; i++) fdOf.put(request.boIndices()[i], request.fds()[i]);
        Map<Integer, List<Fill>> byGpu = new HashMap<>();
        Map<Integer, Long> totals = new HashMap<>();
        for (KfdDeviceEntry d : kfd.getDeviceEntriesList()) {
            if (d.getCpuCoresCount() != 0) continue;
            byGpu.put(d.getGpuId(), new ArrayList<>());
            totals.put(d.getGpuId(), 0L);
        }
        for (int i = 0; i < kfd.getBoEntriesCount(); i++) {
            KfdBoEntry bo = kfd.getBoEntries(i);
            if (!BoBucket.hasContents(bo.getAllocFlags())) continue;
            long offset = totals.get(bo.getGpuId());
            byGpu.get(bo.getGpuId()).add(new Fill(i, bo, offset, fdOf.get(i)));
            totals.put(bo.getGpuId(), offset + bo.getSize());
        }
        List<CompletableFuture<Void>> parts = new ArrayList<>();
        for (var e : byGpu.entrySet()) {
            int user = e.getKey();
            int actual = plan.mappings().get(request.fileId()).localGpu(user);
            int minor = plan.renderMinor(actual);
            String pages = ImageNames.pages(request.fileId(), user);
            long total = totals.get(user);
            List<Fill> fills = e.getValue();
            parts.add(CompletableFuture.runAsync(() -> fillGpu(pages, total, user, minor, fills), worker(actual)));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new))
                .whenComplete((ok, failure) -> UnixSockets.closeAll(request.fds()));
    }

    private ExecutorService worker(int actualGpuId) {
        ExecutorService w = workers.get(actualGpuId);
        if (w == null) {
            throw new CriuException(Errno.EINVAL, String.format("GPU 0x%04x has no refill worker: it is not one this"
                    + " restore maps to", actualGpuId));
        }
        return w;
    }

    private void fillGpu(String pages, long total, int userGpuId, int minor, List<Fill> fills) {
        String gpu = String.format("GPU 0x%04x (renderD%d)", userGpuId, minor);
        try (PagesFileReader in = new PagesFileReader(imagesDir, pages, total)) {
            if (fills.isEmpty()) return;
            long largest = fills.stream().mapToLong(f -> f.bo().getSize()).max().orElse(0);
            SdmaCopier.onRenderNode(sys, minor, MaxBufferSize.bufferFor(maxBufferSize, largest), copier -> {
                for (Fill f : fills) {
                    try {
                        copier.write(f.fd(), f.bo().getSize(), in, f.payloadOffset());
                    } catch (CriuException e) {
                        throw new CriuException(e.errno(), String.format("%s: refill of BO %d at 0x%x (%d bytes) on %s"
                                + " failed: %s", pages, f.index(), f.bo().getAddr(), f.bo().getSize(), gpu,
                                e.getMessage()), e);
                    }
                }
            });
        } catch (CriuException e) {
            if (e.getMessage().startsWith(pages)) throw e;
            throw new CriuException(e.errno(), pages + ": " + gpu + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw new CriuException(Errno.EIO, pages + ": " + gpu + ": refill failed: " + e, e);
        }
    }

    /**
     * Stops the workers and waits for the copies still running, except when criu is told to stop meanwhile: a copy
     * inside a GPU call that never returns would otherwise hold criu in its exit hook for good (criu blocks SIGINT
     * while it restores, so the signal that ended {@link RefillSession#finish}'s wait is still pending here). The
     * copies left behind end with criu's process (daemon threads).
     */
    @Override
    public synchronized void close() {
        workers.values().forEach(ExecutorService::shutdown);
        try {
            for (ExecutorService w : workers.values()) {
                while (!w.awaitTermination(STOP_POLL_MS, TimeUnit.MILLISECONDS)) {
                    if (Interrupts.pendingStop().isPresent()) {
                        log.debug("criu is ending: GPU memory refills still running are left to end with it");
                        return;
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            workers.clear();
        }
    }
}

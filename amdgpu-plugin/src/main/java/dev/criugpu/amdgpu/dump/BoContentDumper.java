package dev.criugpu.amdgpu.dump;

import dev.criugpu.amdgpu.images.FramedFile;
import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.images.PagesFileWriter;
import dev.criugpu.amdgpu.kfd.BoBucket;
import dev.criugpu.amdgpu.kfd.KfdCheckpoint;
import dev.criugpu.amdgpu.sys.SdmaCopier;
import dev.criugpu.amdgpu.topology.KfdNode;
import dev.criugpu.amdgpu.topology.NodeProperty;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.Interrupts;
import dev.criugpu.api.sys.Syscalls;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * Copies the contents of every VRAM/GTT BO of one CHECKPOINT into {@code amdgpu-pages-<id>-<user gpu %04x>.img},
 * one file per GPU (written even when the GPU has no such BO, as upstream's restore expects one), BOs in KFD
 * bucket order. One platform thread per GPU opens the GPU's render node in this process and reads through SDMA
 * ({@link SdmaCopier}) with a bounce buffer of min(largest BO, {@code KFD_MAX_BUFFER_SIZE}). BOs are picked by
 * their user gpu id, which is also the file name and what restore looks for (upstream filters and names by the
 * actual id; the two agree unless the process was migrated). If any GPU fails, the pages files this call
 * finished are removed again and the first failure is thrown, one line naming the file, BO and GPU.
 *
 * <p>The hook's thread waits for the copies interruptibly (DESIGN rule 4, {@link Interrupts}): when criu is told to
 * stop meanwhile, the copies are abandoned (each thread stops before its next BO and never renames its
 * {@code .partial} file; the pages files already finished are removed) and the wait gives up at once. That is why
 * each copy thread owns the dma-buf fds of its BOs and closes them itself when it ends: a thread still inside a copy
 * when the wait gives up never finds its fd closed, or reused, under it.
 */
public final class BoContentDumper {
    private final Syscalls sys;
    private final Path imagesDir;
    private final long maxBufferSize;

    public BoContentDumper(Syscalls sys, Path imagesDir, long maxBufferSize) {
        this.sys = sys;
        this.imagesDir = imagesDir;
        this.maxBufferSize = maxBufferSize;
    }

    /**
     * {@code toUser} maps each topology gpu id to the process's user gpu id (from the device buckets). The dma-buf fds
     * of the BOs copied here are added to {@code takenFds} before any copy starts: the copy threads close them.
     */
    public void dump(int fileId, KfdCheckpoint cp, Topology topology, Map<Integer, Integer> toUser, Set<Integer> takenFds) {
        Copies copies = new Copies();
        List<GpuJob> jobs = new ArrayList<>();
        for (KfdNode gpu : topology.gpus()) {
            int user = toUser.get(gpu.gpuId());
            List<BoBucket> bos = cp.bos().stream().filter(b -> b.hasContents() && b.gpuId() == user).toList();
            jobs.add(new GpuJob(copies, ImageNames.pages(fileId, user), user,
                    (int) gpu.get(NodeProperty.DRM_RENDER_MINOR), bos));
        }
        for (GpuJob job : jobs) {
            for (BoBucket b : job.bos) if (b.hasDmabuf()) takenFds.add(b.dmabufFd());
        }
        for (GpuJob job : jobs) {
            Thread.ofPlatform().name(String.format("amdgpu-sdma-%04x", job.userGpuId)).start(job);
        }
        try {
            Interrupts.await(CompletableFuture.allOf(jobs.stream().map(j -> j.done).toArray(CompletableFuture[]::new)),
                    "the SDMA copies of " + ImageNames.kfd(fileId));
        } catch (ExecutionException e) {
            throw new IllegalStateException("a copy thread ended abnormally", e.getCause()); // run() catches everything
        } catch (CriuException e) {
            copies.abandon(jobs);
            throw e;
        }
        CriuException first = null;
        for (GpuJob job : jobs) {
            if (job.failure == null) continue;
            if (first == null) first = job.failure;
            else first.addSuppressed(job.failure);
        }
        if (first == null) return;
        for (GpuJob job : jobs) {
            if (job.failure != null) continue;
            try {
                ImageFiles.delete(imagesDir, job.fileName);
            } catch (IOException e) {
                first.addSuppressed(e);
            }
        }
        throw first;
    }

    /** The copies of one dump; once abandoned, none of their pages files is finished or left finished. */
    private final class Copies {
        private boolean abandoned;

        synchronized boolean abandoned() {
            return abandoned;
        }

        /** Renames {@code out} to its real name unless the copies were abandoned (then it is dropped). */
        synchronized void finish(GpuJob job, PagesFileWriter out) {
            if (abandoned) {
                out.abort();
                throw job.stopped();
            }
            out.close();
            job.finished = true;
        }

        synchronized void abandon(List<GpuJob> jobs) {
            abandoned = true;
            for (GpuJob job : jobs) {
                if (job.finished) FramedFile.deleteQuietly(imagesDir.resolve(job.fileName));
            }
        }
    }

    private final class GpuJob implements Runnable {
        final String fileName;
        final int userGpuId;
        final int renderMinor;
        final List<BoBucket> bos;
        final Copies copies;
        final CompletableFuture<Void> done = new CompletableFuture<>();
        volatile CriuException failure;
        boolean finished;

        GpuJob(Copies copies, String fileName, int userGpuId, int renderMinor, List<BoBucket> bos) {
            this.copies = copies;
            this.fileName = fileName;
            this.userGpuId = userGpuId;
            this.renderMinor = renderMinor;
            this.bos = bos;
        }

        @Override
        public void run() {
            try {
                copy();
            } catch (CriuException e) {
                failure = e;
            } catch (RuntimeException | Error e) {
                failure = new CriuException(Errno.EIO, gpu() + ": BO copy failed: " + e, e);
            } finally {
                for (BoBucket b : bos) {
                    if (b.hasDmabuf()) closeQuietly(b.dmabufFd());
                }
                done.complete(null);
            }
        }

        private void closeQuietly(int fd) {
            try {
                sys.close(fd);
            } catch (RuntimeException ignored) {
                // the fd is gone either way; the copy's own outcome is what is reported
            }
        }

        CriuException stopped() {
            return new CriuException(Errno.EINTR, fileName + ": copy abandoned, criu is ending");
        }

        private String gpu() {
            return String.format("%s: GPU 0x%04x (renderD%d)", fileName, userGpuId, renderMinor);
        }

        private void copy() {
            long total = 0;
            long largest = 0;
            for (BoBucket b : bos) {
                total += b.size();
                largest = Math.max(largest, b.size());
            }
            PagesFileWriter out = new PagesFileWriter(imagesDir, fileName, total);
            try {
                if (!bos.isEmpty()) copyAll(out, MaxBufferSize.bufferFor(maxBufferSize, largest));
                copies.finish(this, out);
            } catch (RuntimeException | Error e) {
                out.abort();
                throw e;
            }
        }

        private void copyAll(PagesFileWriter out, long bufferBytes) {
            try {
                SdmaCopier.onRenderNode(sys, renderMinor, bufferBytes, copier -> copyAll(out, copier));
            } catch (CriuException e) {
                if (e.getMessage().startsWith(fileName)) throw e;
                throw new CriuException(e.errno(), gpu() + ": " + e.getMessage(), e);
            }
        }

        private void copyAll(PagesFileWriter out, SdmaCopier copier) {
            for (int i = 0; i < bos.size(); i++) {
                BoBucket bo = bos.get(i);
                if (copies.abandoned()) throw stopped();
                if (!bo.hasDmabuf()) {
                    throw new CriuException(Errno.EINVAL, String.format("%s: BO %d at 0x%x on GPU 0x%04x has no"
                            + " dma-buf fd from CHECKPOINT", fileName, i, bo.addr(), userGpuId));
                }
                try {
                    copier.read(bo.dmabufFd(), bo.size(), out);
                } catch (CriuException e) {
                    throw new CriuException(e.errno(), String.format("%s: copy of BO %d at 0x%x (%d bytes) on GPU"
                            + " 0x%04x (renderD%d) failed: %s", fileName, i, bo.addr(), bo.size(), userGpuId,
                            renderMinor, e.getMessage()), e);
                }
            }
        }
    }
}

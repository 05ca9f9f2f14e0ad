package dev.criugpu.cuda;

import dev.criugpu.api.Interrupts;
import dev.criugpu.api.Threads;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.DriverBackend;
import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.inventory.ImageException;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * The slow parts of a restore's init, started from {@link CudaPlugin#prepare} on threads of their own so that they
 * overlap the rest of the JVM's start: which backend opens (loading libcuda), each GPU's free memory (NVML, tens of
 * milliseconds), and the images init reads (the first reads of a JVM cost tens of milliseconds). All finish inside the window in which the shim parks the next pid: {@link #settle} is
 * called before init returns, so a thread the driver's libraries leave behind is one that PidGuard sees (DESIGN
 * rule 3).
 */
final class RestoreProbes {
    private final CompletableFuture<BackendSelection> backend;
    private final CompletableFuture<Optional<Map<GpuUuid, Long>>> freeMib;
    /** Empty when the shim could not name the images directory. */
    private final Optional<CompletableFuture<RestoreImages>> images;

    private RestoreProbes(CompletableFuture<BackendSelection> backend, CompletableFuture<Optional<Map<GpuUuid, Long>>> freeMib,
                          Optional<CompletableFuture<RestoreImages>> images) {
        this.backend = backend;
        this.freeMib = freeMib;
        this.images = images;
    }

    static RestoreProbes start(PluginConfig config, Optional<Path> imagesDir) {
        PluginConfig.BackendChoice choice = config.backend();
        String path = System.getenv("PATH");
        return new RestoreProbes(
                CompletableFuture.supplyAsync(() -> BackendSelection.choose(choice, DriverBackend::probe, path),
                        Threads.daemonEach("cuda-backend-probe")),
                CompletableFuture.supplyAsync(GpuMemory::freeMib, Threads.daemonEach("cuda-gpu-free")),
                imagesDir.map(dir -> CompletableFuture.supplyAsync(() -> {
                    try {
                        return RestoreImages.read(dir);
                    } catch (ImageException e) {
                        throw new CompletionException(e);
                    }
                }, Threads.daemonEach("cuda-restore-images"))));
    }

    /** The images as read in the background, or null when they were not read from {@code dir} (then init reads them). */
    RestoreImages images(Path dir) throws ImageException {
        if (images.isEmpty()) return null;
        try {
            RestoreImages read = Interrupts.await(images.get(), "the CUDA images to be read");
            return read.dir().equals(dir) ? read : null;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof ImageException x) {
                if (x.file() == null || x.file().startsWith(dir)) throw x;
                return null; // read from another directory than init's: init reads its own
            }
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new IllegalStateException("reading the CUDA images: " + e.getCause(), e.getCause());
        }
    }

    BackendSelection backend() {
        return await(backend, "the CUDA backend to load");
    }

    Optional<Map<GpuUuid, Long>> freeMib() {
        return await(freeMib, "NVML's free memory of the GPUs");
    }

    /** Waits for all, whether init used them or not; what failed was reported by the one that used it. */
    void settle() {
        try {
            Interrupts.await(CompletableFuture.allOf(backend, freeMib, images.orElse(CompletableFuture.completedFuture(null))),
                    "the CUDA backend, NVML and the images");
        } catch (ExecutionException e) {
            // a failure is the business of the call that wanted the answer
        }
    }

    private static <T> T await(CompletableFuture<T> f, String what) {
        try {
            return Interrupts.await(f, what);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new IllegalStateException(what + ": " + e.getCause(), e.getCause());
        }
    }
}

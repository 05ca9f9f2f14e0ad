package dev.criugpu.cuda;

import dev.criugpu.api.Interrupts;
import dev.criugpu.api.Threads;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.sys.DriverBackend;
import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.inventory.ImageException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The slow parts of a restore's init, started from {@link CudaPlugin#prepare} on threads of their own so that they
 * overlap the rest of the JVM's start: which backend opens (loading libcuda), each GPU's free memory (NVML, tens of
 * milliseconds), and the images init reads (the first reads of a JVM cost tens of milliseconds). All finish inside the window in which the shim parks the next pid: {@link #settle} is
 * called before init returns, so a thread the driver's libraries leave behind is one that PidGuard sees (DESIGN
 * rule 3).
 */
final class RestoreProbes {
    private static final Logger log = LoggerFactory.getLogger(RestoreProbes.class);

    /** When prepare started the probes, and when each ended: said in criu's log, to tell what init waited for. */
    private final long startNs = System.nanoTime();
    private final AtomicLong backendDoneNs = new AtomicLong();
    private final AtomicLong freeDoneNs = new AtomicLong();
    private final AtomicLong imagesDoneNs = new AtomicLong();
    private final AtomicLong backendAskedNs = new AtomicLong();

    private final CompletableFuture<BackendSelection> backend;
    private final CompletableFuture<Optional<Map<GpuUuid, Long>>> freeMib;
    /** Empty when the shim could not name the images directory. */
    private final Optional<CompletableFuture<RestoreImages>> images;

    private RestoreProbes(PluginConfig config, Optional<Path> imagesDir) {
        PluginConfig.BackendChoice choice = config.backend();
        String path = System.getenv("PATH");
        backend = CompletableFuture.supplyAsync(timed(() -> BackendSelection.choose(choice, DriverBackend::probe, path),
                backendDoneNs), Threads.daemonEach("cuda-backend-probe"));
        freeMib = CompletableFuture.supplyAsync(timed(GpuMemory::freeMib, freeDoneNs), Threads.daemonEach("cuda-gpu-free"));
        images = imagesDir.map(dir -> CompletableFuture.supplyAsync(timed(() -> {
            try {
                return RestoreImages.read(dir);
            } catch (ImageException e) {
                throw new CompletionException(e);
            }
        }, imagesDoneNs), Threads.daemonEach("cuda-restore-images")));
    }

    static RestoreProbes start(PluginConfig config, Optional<Path> imagesDir) {
        return new RestoreProbes(config, imagesDir);
    }

    private static <T> Supplier<T> timed(Supplier<T> probe, AtomicLong doneNs) {
        return () -> {
            try {
                return probe.get();
            } finally {
                doneNs.set(System.nanoTime());
            }
        };
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
        backendAskedNs.compareAndSet(0, System.nanoTime());
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
        log.debug("restore probes, ms after prepare started them: backend {} (init asked at {}), NVML's free memory {}, "
                + "images {}; init done at {}", ms(backendDoneNs.get()), ms(backendAskedNs.get()), ms(freeDoneNs.get()),
                ms(imagesDoneNs.get()), ms(System.nanoTime()));
    }

    private String ms(long ns) {
        return ns == 0 ? "-" : Long.toString((ns - startNs) / 1_000_000);
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

package dev.criugpu.cuda;

import dev.criugpu.api.Interrupts;
import dev.criugpu.api.Threads;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.DriverBackend;
import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.GpuUuid;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * The two slow questions of a restore's init, asked from {@link CudaPlugin#prepare} on threads of their own so that
 * they overlap the rest of the JVM's start: which backend opens (loading libcuda), and each GPU's free memory (NVML,
 * tens of milliseconds). Both finish inside the window in which the shim parks the next pid: {@link #settle} is
 * called before init returns, so a thread the driver's libraries leave behind is one that PidGuard sees (DESIGN
 * rule 3).
 */
final class RestoreProbes {
    private final CompletableFuture<BackendSelection> backend;
    private final CompletableFuture<Optional<Map<GpuUuid, Long>>> freeMib;

    private RestoreProbes(CompletableFuture<BackendSelection> backend, CompletableFuture<Optional<Map<GpuUuid, Long>>> freeMib) {
        this.backend = backend;
        this.freeMib = freeMib;
    }

    static RestoreProbes start(PluginConfig config) {
        PluginConfig.BackendChoice choice = config.backend();
        String path = System.getenv("PATH");
        return new RestoreProbes(
                CompletableFuture.supplyAsync(() -> BackendSelection.choose(choice, DriverBackend::probe, path),
                        Threads.daemonEach("cuda-backend-probe")),
                CompletableFuture.supplyAsync(GpuMemory::freeMib, Threads.daemonEach("cuda-gpu-free")));
    }

    BackendSelection backend() {
        return await(backend, "the CUDA backend to load");
    }

    Optional<Map<GpuUuid, Long>> freeMib() {
        return await(freeMib, "NVML's free memory of the GPUs");
    }

    /** Waits for both, whether init used them or not; what failed was reported by the one that used it. */
    void settle() {
        try {
            Interrupts.await(CompletableFuture.allOf(backend, freeMib), "the CUDA backend and NVML to answer");
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

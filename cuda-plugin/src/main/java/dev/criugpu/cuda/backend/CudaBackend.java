package dev.criugpu.cuda.backend;

import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.state.CudaState;

import java.util.List;
import java.util.OptionalInt;

/**
 * One way to drive the CUDA checkpoint API for another process: the driver API in-process, or NVIDIA's
 * cuda-checkpoint executable. Implementations are safe to call from several threads at once for different pids.
 */
public interface CudaBackend {

    /** "driver API 13000 (libcuda.so.1)" or "cuda-checkpoint at /usr/bin/cuda-checkpoint". */
    String describe();

    /** Short name for logs and config: {@code driver} or {@code cli}. */
    String name();

    /** cuDriverGetVersion of the driver behind this backend; 0 when it does not say (cuda-checkpoint). */
    default int apiVersion() {
        return 0;
    }

    /** Whether restore accepts GPU pairs (driver API 13000+, or cuda-checkpoint with --device-map). */
    boolean supportsGpuRemap();

    /** The CUDA restore thread of {@code pid}, or empty when the process has no CUDA state (the cheap query). */
    OptionalInt restoreThread(int pid) throws CudaCallException;

    CudaState state(int pid) throws CudaCallException;

    /** Locks {@code pid}; {@code timeoutMs} 0 waits for ever. */
    void lock(int pid, int timeoutMs) throws CudaCallException;

    void checkpoint(int pid) throws CudaCallException;

    /** Restores {@code pid}; {@code pairs} empty restores onto the same GPUs, else lists every checkpointed GPU. */
    void restore(int pid, List<GpuPair> pairs) throws CudaCallException;

    void unlock(int pid) throws CudaCallException;

    /**
     * Why this backend cannot be used, found on first asking (a backend in another process learns it when that
     * process is up); empty when it can.
     */
    default java.util.Optional<String> unavailable() {
        return java.util.Optional.empty();
    }

    /** Prepares this process to call restore (driver: cuInit once; the CLI needs nothing). */
    default void prepareRestore() throws CudaCallException {
    }
}

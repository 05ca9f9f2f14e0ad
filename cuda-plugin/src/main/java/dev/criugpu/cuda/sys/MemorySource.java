package dev.criugpu.cuda.sys;

import java.util.List;
import java.util.Optional;

/**
 * One way of asking the driver about device memory, in the driver's own units (bytes, UUID text). Either query is
 * empty when the source cannot answer; it has said why in the log.
 */
public interface MemorySource {
    /** Every compute process on every GPU, one row per (GPU, process) as the driver lists them. */
    Optional<List<ProcessMemory>> computeProcesses();

    /** Each GPU's unallocated device memory. */
    Optional<List<FreeMemory>> free();

    /** {@code bytes} is negative when the driver could not say (NVML_VALUE_NOT_AVAILABLE, nvidia-smi's [N/A]). */
    public record ProcessMemory(String gpu, int pid, long bytes) {
    }

    public record FreeMemory(String gpu, long bytes) {
    }
}

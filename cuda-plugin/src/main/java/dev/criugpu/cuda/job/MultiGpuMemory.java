package dev.criugpu.cuda.job;

import dev.criugpu.cuda.gpu.GpuUuid;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * A CUDA process on two or more GPUs that the driver could not put back. With peer access enabled between its GPUs
 * (JAX enables it at start, PyTorch at its first copy between GPUs) the driver checkpoints such a process but cannot
 * restore it, not even in place, once it holds about 1 GiB on a GPU: CUDA error 1, so a dump loses it and {@code -R}
 * leaves it stuck (measured on H200, driver 580.159.04, peer-threshold.sh: 966 MiB per GPU restored, 1030 MiB not;
 * without peer access 4 GiB per GPU restore). Whether peer access is on cannot be seen from outside the process, so a
 * process on several GPUs above that size is refused before anything is locked, unless the user says it never
 * enables peer access. A process whose memory cannot be read counts as above it.
 */
public final class MultiGpuMemory {
    /** The largest per-GPU usage (nvidia-smi's figure, context included) seen restored with peer access on. */
    public static final long LARGEST_RESTORED_MIB = 966;
    public static final String SWITCH = "CRIU_CUDA_MULTI_GPU_CHECK=0 (cuda.multi-gpu-check=false)";

    /** A CUDA process and the GPUs it has mapped. */
    public record Task(int pid, List<GpuUuid> gpus) {
    }

    private MultiGpuMemory() {
    }

    /**
     * One line per task on 2+ GPUs above the size, naming its pid, GPUs and memory; {@code usedByPid} (pid → GPU →
     * MiB) is asked only when there is such a task.
     */
    public static List<String> blockers(List<Task> tasks, Supplier<Optional<Map<Integer, Map<GpuUuid, Long>>>> usedByPid) {
        List<Task> multi = tasks.stream().filter(t -> t.gpus().size() > 1).toList();
        if (multi.isEmpty()) return List.of();
        Optional<Map<Integer, Map<GpuUuid, Long>>> used = usedByPid.get();
        List<String> lines = new ArrayList<>();
        for (Task t : multi) {
            String gpus = t.gpus().stream().map(GpuUuid::text).collect(Collectors.joining(", "));
            if (used.isEmpty()) {
                lines.add("pid " + t.pid() + " uses GPUs " + gpus + " and its device memory cannot be read (neither NVML "
                        + "nor nvidia-smi answered): " + why());
                continue;
            }
            Map<GpuUuid, Long> mine = used.get().getOrDefault(t.pid(), Map.of());
            Optional<Map.Entry<GpuUuid, Long>> largest = mine.entrySet().stream().max(Map.Entry.comparingByValue());
            if (largest.isPresent() && largest.get().getValue() <= LARGEST_RESTORED_MIB) continue;
            lines.add("pid " + t.pid() + " uses GPUs " + gpus + " and holds "
                    + largest.map(e -> e.getValue() + " MiB on " + e.getKey().text()).orElse("device memory nvidia-smi does not list")
                    + ": " + why());
        }
        return lines;
    }

    private static String why() {
        return "with peer access between its GPUs (JAX enables it at start, PyTorch at its first copy between GPUs) the "
                + "driver cannot restore a process holding more than about 1 GiB on a GPU (CUDA error 1; measured on "
                + "driver 580: " + LARGEST_RESTORED_MIB + " MiB restored, 1030 MiB not), so the dump would lose it";
    }
}

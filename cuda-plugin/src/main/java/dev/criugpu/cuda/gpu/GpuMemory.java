package dev.criugpu.cuda.gpu;

import dev.criugpu.api.Threads;
import dev.criugpu.cuda.sys.NvmlMemory;
import dev.criugpu.cuda.sys.MemorySource;
import dev.criugpu.cuda.sys.MemorySource.FreeMemory;
import dev.criugpu.cuda.sys.MemorySource.ProcessMemory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Device memory figures from the driver (no CUDA context is made): the memory each process holds on each GPU, and
 * each GPU's free memory. Asked through NVML in this process, or (the memory of processes, at dump) through
 * nvidia-smi when libnvidia-ml cannot be loaded. A query answers empty when nothing can say; callers then skip the
 * check they wanted it for.
 */
public final class GpuMemory {
    private static final Logger log = LoggerFactory.getLogger(GpuMemory.class);
    /** The longest a query may take (nvidia-smi's limit; NVML answers in milliseconds). */
    public static final long TIMEOUT_S = 15;
    private static final long MIB = 1L << 20;

    private GpuMemory() {
    }

    /** pid → (GPU → MiB) of every compute process. */
    public static Optional<Map<Integer, Map<GpuUuid, Long>>> usedByPid() {
        return source().computeProcesses().map(GpuMemory::usedMib);
    }

    private static final java.util.concurrent.atomic.AtomicBoolean WARMING = new java.util.concurrent.atomic.AtomicBoolean();

    /** Readies NVML for {@link #usedByPid}, once, on a thread of its own: see {@link NvmlMemory#keepOpen}. */
    public static void warmUp() {
        if (WARMING.compareAndSet(false, true)) Threads.startDaemon("cuda-nvml-warm-up", NvmlMemory::keepOpen);
    }

    /**
     * GPU → free MiB, from NVML only: a restore asks it in criu's own process, which must start no child process
     * (the JDK's first one sets SIGCHLD to SIG_DFL, and criu's restore waits for its tasks through its SIGCHLD handler).
     */
    public static Optional<Map<GpuUuid, Long>> freeMib() {
        Optional<String> unusable = NvmlMemory.unusable();
        if (unusable.isEmpty()) return NvmlMemory.INSTANCE.free().map(GpuMemory::freeMib);
        log.debug("GPU free memory is not known: {}", unusable.get());
        return Optional.empty();
    }

    /** NVML when libnvidia-ml loads and has the calls, else nvidia-smi. */
    static MemorySource source() {
        Optional<String> unusable = NvmlMemory.unusable();
        if (unusable.isEmpty()) return NvmlMemory.INSTANCE;
        log.debug("GPU memory from nvidia-smi, not NVML: {}", unusable.get());
        return NvidiaSmiMemory.INSTANCE;
    }

    /**
     * Whole MiB per pid and GPU, rounded up (a restore must find room for all of it); a process listed more than once
     * on a GPU is summed. Rows without a figure or with a GPU id that is no GPU UUID are left out.
     */
    static Map<Integer, Map<GpuUuid, Long>> usedMib(List<ProcessMemory> rows) {
        Map<Integer, Map<GpuUuid, Long>> used = new HashMap<>();
        Map<Integer, Map<GpuUuid, Long>> bytes = new HashMap<>();
        for (ProcessMemory r : rows) {
            if (r.bytes() < 0) continue;
            Optional<GpuUuid> gpu = uuid(r.gpu());
            if (gpu.isEmpty()) continue;
            bytes.computeIfAbsent(r.pid(), p -> new LinkedHashMap<>()).merge(gpu.get(), r.bytes(), Long::sum);
        }
        bytes.forEach((pid, perGpu) -> {
            Map<GpuUuid, Long> mib = new LinkedHashMap<>();
            perGpu.forEach((gpu, b) -> mib.put(gpu, Math.ceilDiv(b, MIB)));
            used.put(pid, mib);
        });
        return used;
    }

    /** Whole MiB per GPU, rounded down (room that is surely there); rows of no GPU UUID are left out. */
    static Map<GpuUuid, Long> freeMib(List<FreeMemory> rows) {
        Map<GpuUuid, Long> free = new LinkedHashMap<>();
        for (FreeMemory r : rows) {
            uuid(r.gpu()).ifPresent(gpu -> free.put(gpu, r.bytes() / MIB));
        }
        return free;
    }

    private static Optional<GpuUuid> uuid(String text) {
        try {
            return Optional.of(GpuUuid.parse(text));
        } catch (IllegalArgumentException e) {
            log.debug("GPU memory: '{}' is no GPU UUID; its row is left out", text);
            return Optional.empty();
        }
    }
}

package dev.criugpu.cuda.gpu;

import dev.criugpu.cuda.sys.NvmlMemory;
import dev.criugpu.api.LogLevel;
import dev.criugpu.api.log.CriuLog;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * GPU host check that NVML's answers, read through our bindings, are nvidia-smi's: run while CUDA processes hold
 * device memory, naming some of their pids. Prints both sources' figures and the NVML debug line (threads before,
 * in and after the session), then {@code RESULT same} (exit 0) or {@code RESULT differ: why} (exit 1).
 * Usage: {@code java --enable-native-access=ALL-UNNAMED -cp JARS dev.criugpu.cuda.gpu.GpuMemoryCheck PID...}
 */
public final class GpuMemoryCheck {
    /** Free memory may move between the two queries (the driver's own bookkeeping): a little slack. */
    static final long FREE_SLACK_MIB = 64;

    private GpuMemoryCheck() {
    }

    public static void main(String[] args) {
        CriuLog.stderrThreshold(LogLevel.DEBUG);
        Optional<String> unusable = NvmlMemory.unusable();
        if (unusable.isPresent()) {
            System.out.println("RESULT differ: NVML cannot be used here: " + unusable.get());
            System.exit(1);
        }
        var nvmlUsed = NvmlMemory.INSTANCE.computeProcesses().map(GpuMemory::usedMib);
        var smiUsed = NvidiaSmiMemory.INSTANCE.computeProcesses().map(GpuMemory::usedMib);
        var nvmlFree = NvmlMemory.INSTANCE.free().map(GpuMemory::freeMib);
        var smiFree = NvidiaSmiMemory.INSTANCE.free().map(GpuMemory::freeMib);
        System.out.println("used MiB by pid, NVML:       " + nvmlUsed.map(Object::toString).orElse("(no answer)"));
        System.out.println("used MiB by pid, nvidia-smi: " + smiUsed.map(Object::toString).orElse("(no answer)"));
        System.out.println("free MiB, NVML:       " + nvmlFree.map(Object::toString).orElse("(no answer)"));
        System.out.println("free MiB, nvidia-smi: " + smiFree.map(Object::toString).orElse("(no answer)"));
        String why = differences(nvmlUsed, smiUsed, nvmlFree, smiFree, args);
        System.out.println(why == null ? "RESULT same" : "RESULT differ: " + why);
        System.exit(why == null ? 0 : 1);
    }

    /** Null when NVML answered, lists every named pid, and agrees with nvidia-smi; else the first difference. */
    static String differences(Optional<Map<Integer, Map<GpuUuid, Long>>> nvmlUsed, Optional<Map<Integer, Map<GpuUuid, Long>>> smiUsed,
                              Optional<Map<GpuUuid, Long>> nvmlFree, Optional<Map<GpuUuid, Long>> smiFree, String[] pids) {
        if (nvmlUsed.isEmpty() || nvmlFree.isEmpty()) return "NVML gave no answer";
        if (smiUsed.isEmpty() || smiFree.isEmpty()) return "nvidia-smi gave no answer to compare with";
        for (String p : pids) {
            Map<GpuUuid, Long> m = nvmlUsed.get().get(Integer.parseInt(p));
            if (m == null || m.values().stream().noneMatch(v -> v > 0)) return "NVML lists no device memory of pid " + p;
        }
        if (!nvmlUsed.get().keySet().equals(smiUsed.get().keySet())) return "the pids differ";
        for (var e : nvmlUsed.get().entrySet()) {
            Map<GpuUuid, Long> other = smiUsed.get().get(e.getKey());
            if (!e.getValue().keySet().equals(other.keySet())) return "pid " + e.getKey() + " is on other GPUs";
            for (var g : e.getValue().entrySet()) {
                // nvidia-smi prints whole MiB; NVML's bytes are rounded up
                if (Math.abs(g.getValue() - other.get(g.getKey())) > 1) return "pid " + e.getKey() + " on " + g.getKey() + " holds another amount";
            }
        }
        if (!nvmlFree.get().keySet().equals(smiFree.get().keySet())) return "the GPUs differ";
        for (var e : nvmlFree.get().entrySet()) {
            if (Math.abs(e.getValue() - Objects.requireNonNull(smiFree.get().get(e.getKey()))) > FREE_SLACK_MIB) {
                return e.getKey() + " has another amount free";
            }
        }
        return null;
    }
}

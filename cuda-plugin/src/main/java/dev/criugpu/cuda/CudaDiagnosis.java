package dev.criugpu.cuda;

import dev.criugpu.api.Diagnosis;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.CliBackend;
import dev.criugpu.cuda.sys.DriverBackend;
import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.NvidiaGpus;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** What {@code criu-gpu doctor} shows for CUDA: driver, API, persistence, backend, enabled or why not. */
final class CudaDiagnosis {
    private CudaDiagnosis() {
    }

    /** @param cfgFile the plugin dir's criu-gpu.cfg, or null when the plugin dir is unknown */
    static Diagnosis run(Map<String, String> env, Path cfgFile) {
        List<String> details = new ArrayList<>();
        // First: a bad setting is worth knowing before the plugin dir moves to a GPU host.
        PluginConfig config;
        try {
            config = PluginConfig.load(env, cfgFile);
            config.backend();
            config.parallel();
            config.guard();
            config.deviceMap();
            config.treatAbsent();
        } catch (IllegalArgumentException e) {
            return Diagnosis.disabled(CudaPlugin.NAME, "bad configuration: " + e.getMessage(), details);
        }
        Path proc = NvidiaGpus.PROC_ROOT;
        if (!Files.isDirectory(proc.resolve("gpus"))) {
            return Diagnosis.disabled(CudaPlugin.NAME, "no NVIDIA GPU: " + proc.resolve("gpus") + " is absent", details);
        }
        details.add("kernel driver: " + NvidiaGpus.driverRelease(proc).orElse("unknown release"));
        try {
            for (GpuInfo g : NvidiaGpus.list(proc)) {
                details.add("GPU minor " + g.minor() + ": " + g.model() + " " + g.uuid() + " (" + g.busId() + ")");
            }
        } catch (IOException | IllegalArgumentException e) {
            details.add("GPUs: cannot list: " + e.getMessage());
        }
        details.add("persistence: " + persistence());
        DriverBackend.Probe probe = DriverBackend.probe();
        details.add("driver API: " + (probe.usable()
                ? probe.apiVersion() + (probe.backend().supportsGpuRemap() ? " (checkpoint API, GPU remapping)" : " (checkpoint API, no GPU remapping: needs r580)")
                : probe.reason()));
        details.add(CliBackend.EXECUTABLE + ": " + CliBackend.findInPath(env.get("PATH")).map(Path::toString).orElse("not in PATH"));
        BackendSelection s = BackendSelection.choose(config.backend(), () -> probe, env.get("PATH"));
        details.add("parallel per-task work: " + (config.parallel() ? "on" : "off (CRIU_CUDA_PARALLEL=0 or cuda.parallel=0)"));
        return s.chosen().isPresent()
                ? Diagnosis.enabled(CudaPlugin.NAME, s.reason(), details)
                : Diagnosis.disabled(CudaPlugin.NAME, s.reason(), details);
    }

    /**
     * Persistence mode without NVML: nvidia-persistenced running is the visible sign; the legacy per-GPU mode set
     * by {@code nvidia-smi -pm 1} is not visible in /proc.
     */
    private static String persistence() {
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            boolean daemon = procs.filter(p -> p.getFileName().toString().chars().allMatch(Character::isDigit))
                    .anyMatch(p -> {
                        try {
                            return Files.readString(p.resolve("comm")).strip().equals("nvidia-persistenced");
                        } catch (IOException e) {
                            return false;
                        }
                    });
            return daemon ? "nvidia-persistenced is running (restore needs no cuInit)"
                    : "nvidia-persistenced not running (legacy persistence mode is not visible here); restore calls cuInit";
        } catch (IOException e) {
            return "unknown (" + e.getMessage() + ")";
        }
    }
}

package dev.criugpu.cuda.backend;

import dev.criugpu.cuda.sys.DriverBackend;
import dev.criugpu.cuda.config.PluginConfig.BackendChoice;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Picks the backend: the driver API when libcuda has it, else cuda-checkpoint from PATH, else none (with the
 * reason). A forced choice ({@code CRIU_CUDA_BACKEND}) takes only that one.
 */
public record BackendSelection(CudaBackend backend, String reason, List<String> considered) {

    public Optional<CudaBackend> chosen() {
        return Optional.ofNullable(backend);
    }

    /**
     * @param choice AUTO, DRIVER or CLI
     * @param driverProbe looks at libcuda (only called when the driver may be used)
     * @param path the PATH to search for cuda-checkpoint
     */
    public static BackendSelection choose(BackendChoice choice, Supplier<DriverBackend.Probe> driverProbe, String path) {
        List<String> considered = new ArrayList<>();
        if (choice != BackendChoice.CLI) {
            DriverBackend.Probe probe = driverProbe.get();
            if (probe.usable()) {
                return new BackendSelection(probe.backend(), "using " + probe.backend().describe(), considered);
            }
            considered.add("driver API: " + probe.reason());
            if (choice == BackendChoice.DRIVER) {
                return new BackendSelection(null, "CRIU_CUDA_BACKEND=driver but " + probe.reason(), considered);
            }
        }
        Optional<Path> exe = CliBackend.findInPath(path);
        if (exe.isEmpty()) {
            considered.add(CliBackend.EXECUTABLE + ": not found in PATH");
            String why = String.join("; ", considered);
            return new BackendSelection(null, (choice == BackendChoice.CLI ? "CRIU_CUDA_BACKEND=cli but " : "no backend: ") + why, considered);
        }
        try {
            CliBackend cli = CliBackend.open(exe.get());
            if (!cli.supportsActions()) {
                considered.add(exe.get() + " has no --action (driver older than r555)");
                return new BackendSelection(null, "no backend: " + String.join("; ", considered), considered);
            }
            return new BackendSelection(cli, "using " + cli.describe(), considered);
        } catch (CudaCallException e) {
            considered.add(e.reason());
            return new BackendSelection(null, "no backend: " + String.join("; ", considered), considered);
        }
    }
}

package dev.criugpu.cuda;

import dev.criugpu.api.CriuPlugin;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Diagnosis;
import dev.criugpu.api.Errno;
import dev.criugpu.api.Hook;
import dev.criugpu.api.Stage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/** NVIDIA CUDA plugin (spine stage: registers its hooks, logs them, does no GPU work yet). */
public final class CudaPlugin implements CriuPlugin {
    public static final String NAME = "cuda_plugin";
    private static final Logger log = LoggerFactory.getLogger(CudaPlugin.class);

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<Hook> hooks() {
        return EnumSet.of(Hook.RESUME_DEVICES_LATE, Hook.PAUSE_DEVICES, Hook.CHECKPOINT_DEVICES);
    }

    @Override
    public int init(Stage stage, CriuServices services) {
        log.info("Java side ready for {}", stage);
        return 0;
    }

    @Override
    public Diagnosis diagnose() {
        Path gpus = Path.of("/proc/driver/nvidia/gpus");
        return Files.isDirectory(gpus)
                ? Diagnosis.enabled(NAME, "NVIDIA driver present (" + gpus + ")", List.of())
                : Diagnosis.disabled(NAME, "no NVIDIA GPU: " + gpus + " is absent", List.of());
    }

    @Override
    public int pauseDevices(int pid) {
        return Errno.NOT_SUPPORTED;
    }

    @Override
    public int checkpointDevices(int pid) {
        return Errno.NOT_SUPPORTED;
    }

    @Override
    public int resumeDevicesLate(int pid) {
        return Errno.NOT_SUPPORTED;
    }
}

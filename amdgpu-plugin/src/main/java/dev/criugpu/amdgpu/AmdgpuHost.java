package dev.criugpu.amdgpu;

import dev.criugpu.amdgpu.dump.DeviceClassifier;
import dev.criugpu.amdgpu.dump.KfdFileDumper;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.plan.Fdstore;
import dev.criugpu.api.sys.Syscalls;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * Everything the plugin touches on the host, in one place: the syscall seam, the KFD topology root, the device
 * numbers of {@code /dev/kfd} and the render nodes, hsakmt's shared memory file, criu's environment and criu's
 * fdstore. Production takes the real ones; tests put the simulated KFD here.
 */
public record AmdgpuHost(Syscalls sys, Path topologyRoot, DeviceClassifier devices, Path hsakmtShm,
                         Map<String, String> env, Optional<Fdstore> fdstore) {

    public static AmdgpuHost system(CriuServices services) {
        return new AmdgpuHost(Syscalls.libc(), SysfsTopologyReader.DEFAULT_ROOT, DeviceClassifier.system(),
                KfdFileDumper.HSAKMT_SHM, System.getenv(), services.fdstore());
    }
}

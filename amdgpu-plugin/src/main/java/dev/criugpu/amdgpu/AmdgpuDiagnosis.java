package dev.criugpu.amdgpu;

import dev.criugpu.amdgpu.sys.KfdFile;
import dev.criugpu.amdgpu.topology.KfdNode;
import dev.criugpu.amdgpu.topology.NodeProperty;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Diagnosis;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.SyscallException;
import dev.criugpu.api.sys.Syscalls;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code criu-gpu doctor} for AMD: whether criu would enable the plugin ({@code /dev/kfd} opens), the KFD ioctl
 * API version (CRIU needs 1.8), and the GPUs of the KFD topology as a restore would match them.
 */
final class AmdgpuDiagnosis {
    private AmdgpuDiagnosis() {
    }

    static Diagnosis run(Syscalls sys, Path topologyRoot) {
        int fd;
        try {
            fd = sys.open(KfdFile.DEVICE, Syscalls.O_RDONLY | Syscalls.O_CLOEXEC);
        } catch (SyscallException e) {
            return Diagnosis.disabled(AmdgpuPlugin.NAME, "no AMD GPU: " + (e.errno() == Errno.ENOENT
                    ? KfdFile.DEVICE + " is absent" : e.getMessage()), List.of());
        }
        List<String> details = new ArrayList<>();
        try {
            int v = new KfdFile(sys, fd).version();
            details.add(KfdFile.describe(v) + (KfdFile.supportsCriu(v) ? "" : ": dumps of GPU processes will fail"));
        } catch (CriuException e) {
            details.add("cannot ask /dev/kfd its version: " + e.getMessage());
        } finally {
            sys.close(fd);
        }
        try {
            Topology t = new SysfsTopologyReader(topologyRoot).read("Local");
            for (KfdNode gpu : t.gpus()) {
                details.add(String.format("GPU 0x%04x: node %d, renderD%d, device 0x%04x, VRAM %d MiB%s", gpu.gpuId(),
                        gpu.nodeId(), gpu.get(NodeProperty.DRM_RENDER_MINOR), gpu.get(NodeProperty.DEVICE_ID),
                        gpu.get(NodeProperty.VRAM_SIZE) >> 20,
                        gpu.get(NodeProperty.HIVE_ID) != 0 ? String.format(", XGMI hive 0x%x", gpu.get(NodeProperty.HIVE_ID)) : ""));
            }
            if (t.gpus().isEmpty()) details.add("the KFD topology (" + topologyRoot + ") shows no GPU");
        } catch (CriuException e) {
            details.add("cannot read the KFD topology: " + e.getMessage());
        }
        return Diagnosis.enabled(AmdgpuPlugin.NAME, "AMD KFD present (" + KfdFile.DEVICE + ")", details);
    }
}

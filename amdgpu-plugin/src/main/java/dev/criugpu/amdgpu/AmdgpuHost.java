package dev.criugpu.amdgpu;

import dev.criugpu.amdgpu.dump.DeviceClassifier;
import dev.criugpu.amdgpu.dump.KfdFileDumper;
import dev.criugpu.amdgpu.restore.ChildExecutor;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.sys.Syscalls;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Map;

/**
 * Everything the plugin touches on the host, in one place: the syscall seam, the KFD topology root, the device
 * numbers of {@code /dev/kfd} and the render nodes, hsakmt's shared memory file, criu's environment, the
 * native restore library with the calls it makes in criu's children, and criu's {@code fdstore_add}. Production takes the real ones; tests
 * put the simulated KFD here.
 */
public record AmdgpuHost(Syscalls sys, Path topologyRoot, DeviceClassifier devices, Path hsakmtShm,
                         Map<String, String> env, Path executorLibrary, ChildExecutor.Calls childCalls,
                         MemorySegment fdstoreAdd) {

    /** The restore-plan executor inside the plugin directory's {@code java/}. */
    public static final String EXECUTOR_LIBRARY = "java/native/libcriugpu_plan.so";

    public static AmdgpuHost system(CriuServices services) {
        return new AmdgpuHost(Syscalls.libc(), SysfsTopologyReader.DEFAULT_ROOT, DeviceClassifier.system(),
                KfdFileDumper.HSAKMT_SHM, System.getenv(), services.pluginDir().resolve(EXECUTOR_LIBRARY),
                ChildExecutor.Calls.criu(services), services.criuFunction("fdstore_add").orElse(MemorySegment.NULL));
    }
}

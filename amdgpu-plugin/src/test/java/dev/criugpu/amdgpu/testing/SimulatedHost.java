package dev.criugpu.amdgpu.testing;

import dev.criugpu.amdgpu.AmdgpuHost;
import dev.criugpu.amdgpu.dump.DeviceClassifier;
import dev.criugpu.api.plan.Fdstore;
import dev.criugpu.api.sys.PlanCalls;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import static dev.criugpu.amdgpu.dump.DeviceNumbers.makedev;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/** An {@link AmdgpuHost} backed by the simulated KFD and libdrm: KFD is device 235:0, render nodes 226:128+. */
public final class SimulatedHost {
    public static final long KFD_RDEV = makedev(235, 0);
    public static final long FIRST_RENDER_RDEV = makedev(226, 128);
    /** What the plan executor calls in a restored task: the simulator's libc and criu stand-ins. */
    public static final PlanCalls CALLS = new PlanCalls(KfdSimulator.symbol("kfdsim_open"),
            KfdSimulator.symbol("kfdsim_close"), KfdSimulator.symbol("kfdsim_ioctl"),
            KfdSimulator.symbol("kfdsim_find_unused_fd"), KfdSimulator.symbol("kfdsim_log"),
            KfdSimulator.symbol("kfdsim_fdstore_get"));

    private static final MethodHandle FDSTORE_ADD = Linker.nativeLinker().downcallHandle(
            KfdSimulator.symbol("kfdsim_fdstore_add"), FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    private SimulatedHost() {
    }

    public static AmdgpuHost create(Path topologyRoot, Path dir, Map<String, String> env) {
        return create(topologyRoot, dir, env, dir.resolve("no-hsakmt-shm"));
    }

    /** With hsakmt's shared memory file at {@code hsakmtShm}; its folder stands for /dev/shm (semaphores too). */
    public static AmdgpuHost create(Path topologyRoot, Path dir, Map<String, String> env, Path hsakmtShm) {
        KfdSimulator.setShmDir(hsakmtShm.getParent());
        return new AmdgpuHost(KfdSimulator.syscalls(), topologyRoot,
                new DeviceClassifier(OptionalLong.of(KFD_RDEV), OptionalLong.of(FIRST_RENDER_RDEV)),
                hsakmtShm, env, Optional.of(Fdstore.of(fd -> {
                    try {
                        return (int) FDSTORE_ADD.invokeExact(fd);
                    } catch (Throwable t) {
                        throw new IllegalStateException("kfdsim_fdstore_add", t);
                    }
                })));
    }
}

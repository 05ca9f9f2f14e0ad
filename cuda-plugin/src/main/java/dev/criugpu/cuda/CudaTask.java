package dev.criugpu.cuda;

import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.state.CudaState;

import java.util.List;

/** One CUDA task the dump touched: what it was when we found it, and what we believe it is now. */
final class CudaTask {
    final int pid;
    final int nsPid;
    final int restoreTid;
    final CudaState initial;
    final List<GpuInfo> gpus;
    final List<GpuInfo> visible;
    /** MiB it held on each GPU when locked, from nvidia-smi; empty when unknown. */
    volatile java.util.Map<dev.criugpu.cuda.gpu.GpuUuid, Long> usedMib = java.util.Map.of();
    final long startTime;
    volatile CudaState current;
    /** A call on it was under way when the CUDA agent died: it may land still, so only the driver knows its state. */
    volatile boolean uncertain;
    boolean checkpointStarted;
    /** The dump has locked it, or decided to leave it as it was (already locked or checkpointed). */
    boolean lockDecided;
    /** What the driver's checkpoint mapped into it: its host copy of device memory (see HostCopyImages). */
    volatile java.util.List<dev.criugpu.cuda.hostcopy.TaskSpans.Span> hostCopy = java.util.List.of();

    CudaTask(int pid, int nsPid, int restoreTid, CudaState initial, List<GpuInfo> gpus, List<GpuInfo> visible,
             long startTime) {
        this.pid = pid;
        this.nsPid = nsPid;
        this.restoreTid = restoreTid;
        this.initial = initial;
        this.gpus = List.copyOf(gpus);
        this.visible = List.copyOf(visible);
        this.startTime = startTime;
        this.current = initial;
    }

    /** Whether the task is not (or may not be) in the state the user had it in. */
    boolean touched() {
        return current != initial || uncertain;
    }
}

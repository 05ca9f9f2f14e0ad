package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.Interrupts;
import dev.criugpu.api.Threads;
import dev.criugpu.api.sys.ProcStat;
import dev.criugpu.api.sys.ProcessTree;
import dev.criugpu.api.sys.Tasks;
import dev.criugpu.cuda.agent.WatchedTask;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.gpu.TaskGpus;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.Transitions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/**
 * The dump's registry of CUDA tasks: which processes hold CUDA state (the driver's word), each handed to the agent's
 * watch before anything changes it, and which of them criu paused — criu checkpoints exactly the tasks it paused, so
 * those decide what the checkpoint waits for.
 */
final class JobTasks {
    private static final Logger log = LoggerFactory.getLogger(JobTasks.class);

    private final CudaDeps deps;
    private final List<GpuInfo> presentGpus;
    private final WokenWork work;
    private final Runnable recordsState;
    private final Map<Integer, CudaTask> tasks = new LinkedHashMap<>();
    private final Set<Integer> withoutCuda = new HashSet<>();
    private final Set<Integer> paused = new HashSet<>();
    private boolean watched;
    /** nvidia-smi's view of the tasks' device memory, asked at the first CUDA task while the locks go on. */
    private CompletableFuture<Optional<Map<Integer, Map<GpuUuid, Long>>>> memory;

    /** {@code recordsState}: called at the first task found (inventory.img must list the plugin). */
    JobTasks(CudaDeps deps, List<GpuInfo> presentGpus, WokenWork work, Runnable recordsState) {
        this.deps = deps;
        this.presentGpus = presentGpus;
        this.work = work;
        this.recordsState = recordsState;
    }

    CudaTask get(int pid) {
        return tasks.get(pid);
    }

    Collection<CudaTask> all() {
        return tasks.values();
    }

    boolean knownWithoutCuda(int pid) {
        return withoutCuda.contains(pid);
    }

    /** Whether a task was handed to the agent's watch: it hears at exit which came back. */
    boolean watched() {
        return watched;
    }

    /** criu called PAUSE_DEVICES for {@code pid}: it seizes and later checkpoints it. */
    void paused(int pid) {
        paused.add(pid);
    }

    /** Tasks the job lock touched that criu never paused: they left the dumped tree (reparented) meanwhile. */
    List<CudaTask> touchedButNotPaused() {
        return tasks.values().stream().filter(t -> t.touched() && !paused.contains(t.pid) && ProcStat.alive(t.pid)).toList();
    }

    /** Whether every task criu paused and that lives has had its checkpoint started. */
    boolean allCheckpointsStarted() {
        return tasks.values().stream().noneMatch(t -> paused.contains(t.pid) && !t.checkpointStarted && ProcStat.alive(t.pid));
    }

    /** Every CUDA task of the running tree below {@code root} (root included), found and watched. */
    List<CudaTask> findTree(int root) {
        long t0 = System.nanoTime();
        List<CudaTask> found = new ArrayList<>();
        for (int pid : ProcessTree.of(root)) {
            if (pid != root && !ProcStat.of(pid).map(ProcStat::alive).orElse(false)) continue;
            find(pid).ifPresent(found::add);
        }
        log.debug("{} CUDA task(s) in the tree of pid {} found and watched in {} ms", found.size(), root,
                (System.nanoTime() - t0) / 1_000_000);
        return found;
    }

    /** Asks whether {@code pid} holds CUDA state; a CUDA task is recorded (and watched) but not locked yet. */
    Optional<CudaTask> find(int pid) {
        CudaTask known = tasks.get(pid);
        if (known != null) return Optional.of(known);
        if (withoutCuda.contains(pid)) return Optional.empty();
        OptionalInt tid;
        CudaState[] state = new CudaState[1];
        try {
            tid = deps.backend().restoreThread(pid);
            if (tid.isEmpty()) {
                withoutCuda.add(pid);
                log.debug("pid {} has no CUDA state", pid);
                return Optional.empty();
            }
            // served by the task's restore thread: on a task stopped by its user this waits, so interruptibly
            work.runNow(pid, "the CUDA state query", () -> state[0] = deps.backend().state(pid));
        } catch (CudaCallException e) {
            throw CudaErrors.of(pid, "querying its CUDA state", e);
        } catch (CriuException e) {
            throw e;
        } catch (Exception e) {
            throw new CriuException(Errno.EIO, "pid " + pid + ": querying its CUDA state failed: " + e);
        }
        return Optional.of(register(pid, tid.getAsInt(), state[0]));
    }

    /** Whether {@code pid} holds CUDA state, asked without registering it. */
    boolean holdsCuda(int pid) {
        if (tasks.containsKey(pid)) return true;
        if (withoutCuda.contains(pid)) return false;
        try {
            if (deps.backend().restoreThread(pid).isPresent()) return true;
        } catch (CudaCallException e) {
            throw CudaErrors.of(pid, "querying its CUDA state", e);
        }
        withoutCuda.add(pid);
        return false;
    }

    private CudaTask register(int pid, int restoreTid, CudaState state) {
        if (state == CudaState.FAILED) {
            throw new CriuException(Errno.EIO, "pid " + pid + ": its CUDA state is FAILED (an earlier checkpoint or "
                    + "restore broke it); it cannot be dumped");
        }
        List<GpuInfo> gpus = state == CudaState.CHECKPOINTED ? List.of() : gpusOf(pid);
        List<GpuInfo> visible = gpus.isEmpty() ? List.of() : TaskGpus.visible(pid, presentGpus, gpus);
        long start = ProcStat.of(pid).map(ProcStat::startTime).orElse(0L);
        CudaTask task = new CudaTask(pid, Tasks.innermostPid(pid), restoreTid, state, gpus, visible, start);
        if (Transitions.needsCheckpoint(state)) watch(task);
        if (memory == null && !gpus.isEmpty()) {
            memory = CompletableFuture.supplyAsync(GpuMemory::usedByPid, Threads.daemonEach("cuda-gpu-memory"));
        }
        tasks.put(pid, task);
        recordsState.run();
        return task;
    }

    /** Before a task's CUDA state changes: the agent answers for it from now on. */
    private void watch(CudaTask task) {
        try {
            deps.agent().watch(new WatchedTask(task.pid, task.startTime, task.initial));
            watched = true;
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, "pid " + task.pid + ": cannot hand it to the CUDA agent (" + e.getMessage()
                    + "), so a criu that dies would leave it locked; nothing was changed. CRIU_CUDA_GUARD=0 dumps "
                    + "without the agent");
        }
    }

    private List<GpuInfo> gpusOf(int pid) {
        try {
            return TaskGpus.of(pid, presentGpus);
        } catch (IOException e) {
            log.warn("pid {}: cannot read its maps to record its GPUs ({}); a restore cannot remap them", pid, e.getMessage());
            return List.of();
        }
    }

    /**
     * Once, before the first checkpoint moves any device memory: what each task holds on each GPU (asked at the first
     * CUDA task, while the locks went on), so that a restore can tell beforehand whether its target GPUs have room.
     */
    void recordMemory() {
        if (memory == null) return;
        long t0 = System.nanoTime();
        try {
            Interrupts.await(memory, "nvidia-smi's view of the tasks' GPU memory", GpuMemory.TIMEOUT_S * 1000).ifPresent(used -> {
                for (CudaTask t : tasks.values()) t.usedMib = used.getOrDefault(t.pid, Map.of());
            });
            log.debug("GPU memory of the CUDA tasks known {} ms into the checkpoint", (System.nanoTime() - t0) / 1_000_000);
        } catch (ExecutionException | TimeoutException e) {
            log.warn("the GPU memory of the CUDA tasks is not known ({}); a restore cannot check room for them", e.toString());
        } finally {
            memory = null;
        }
    }
}

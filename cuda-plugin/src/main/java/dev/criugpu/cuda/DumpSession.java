package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.Tasks;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.backend.DriverBackend;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.TaskGpus;
import dev.criugpu.cuda.guard.GuardianLauncher;
import dev.criugpu.cuda.image.CudaGpuEntry;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.image.CudaTaskImages;
import dev.criugpu.cuda.proc.Procs;
import dev.criugpu.cuda.ptrace.RestoreThreads;
import dev.criugpu.cuda.state.CudaAction;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.DumpEnding;
import dev.criugpu.cuda.state.Transitions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;

/**
 * One {@code criu dump}: PAUSE_DEVICES locks each CUDA task while the tree runs; CHECKPOINT_DEVICES wakes each
 * task's restore thread (hook thread) and starts its checkpoint (worker), and the call for the last CUDA task joins
 * every checkpoint and re-stops every restore thread (hook thread); exit puts tasks back when the tree survives.
 */
final class DumpSession {
    private static final Logger log = LoggerFactory.getLogger(DumpSession.class);

    private final CriuServices services;
    private final CudaBackend backend;
    private final int lockTimeoutMs;
    private final List<GpuInfo> presentGpus;
    private final TaskWork work;
    private final boolean guard;
    private final Map<Integer, CudaTask> tasks = new LinkedHashMap<>();
    private final Set<Integer> withoutCuda = new HashSet<>();
    private final List<RestoreThreads.Woken> woken = new ArrayList<>();
    private boolean inventoryAdded;
    private boolean memoryRecorded;

    DumpSession(CriuServices services, CudaBackend backend, int lockTimeoutMs, List<GpuInfo> presentGpus,
                boolean parallel, boolean guard) {
        this.services = services;
        this.backend = backend;
        this.lockTimeoutMs = lockTimeoutMs;
        this.presentGpus = presentGpus;
        this.work = new TaskWork(parallel);
        this.guard = guard;
        removeStaleImages();
    }

    /** Records of an earlier dump into the same directory must not be taken for this one's at restore. */
    private void removeStaleImages() {
        services.imageDir().ifPresent(dir -> {
            for (Path f : CudaTaskImages.files(dir)) {
                try {
                    Files.deleteIfExists(f);
                } catch (IOException e) {
                    throw new CriuException(Errno.EIO, f + ": cannot remove an earlier dump's CUDA record: " + e.getMessage());
                }
            }
        });
    }

    int pause(int pid) {
        if (tasks.containsKey(pid)) return 0;
        if (withoutCuda.contains(pid)) return Errno.NOT_SUPPORTED;
        OptionalInt tid;
        CudaState state;
        try {
            tid = backend.restoreThread(pid);
            if (tid.isEmpty()) {
                withoutCuda.add(pid);
                log.debug("pid {} has no CUDA state", pid);
                return Errno.NOT_SUPPORTED;
            }
            state = backend.state(pid);
        } catch (CudaCallException e) {
            throw CudaErrors.of(pid, "querying its CUDA state", e);
        }
        if (state == CudaState.FAILED) {
            throw new CriuException(Errno.EIO, "pid " + pid + ": its CUDA state is FAILED (an earlier checkpoint or "
                    + "restore broke it); it cannot be dumped");
        }
        List<GpuInfo> gpus = state == CudaState.CHECKPOINTED ? List.of() : gpusOf(pid);
        List<GpuInfo> visible = gpus.isEmpty() ? List.of() : TaskGpus.visible(pid, presentGpus, gpus);
        long start = Procs.stat(pid).map(Procs.Stat::startTime).orElse(0L);
        CudaTask task = new CudaTask(pid, Tasks.innermostPid(pid), tid.getAsInt(), state, gpus, visible, start);
        if (Transitions.needsLock(state)) {
            lock(task);
        } else {
            log.info("pid {} was already {} before the dump; it is left so afterwards", pid, state.word());
        }
        tasks.put(pid, task);
        if (!inventoryAdded) {
            if (!services.addInventoryPlugin()) {
                log.warn("this criu cannot record {} in inventory.img; a restore will not know it needs this plugin",
                        CudaPlugin.NAME);
            }
            inventoryAdded = true;
        }
        return 0;
    }

    private List<GpuInfo> gpusOf(int pid) {
        try {
            return TaskGpus.of(pid, presentGpus);
        } catch (IOException e) {
            log.warn("pid {}: cannot read its maps to record its GPUs ({}); a restore cannot remap them", pid, e.getMessage());
            return List.of();
        }
    }

    private void lock(CudaTask task) {
        long t0 = System.nanoTime();
        try {
            backend.lock(task.pid, lockTimeoutMs);
            task.current = CudaState.LOCKED;
            log.info("pid {}: CUDA locked in {} ms (GPUs {})", task.pid, (System.nanoTime() - t0) / 1_000_000,
                    task.gpus.stream().map(g -> g.uuid().text()).toList());
        } catch (CudaCallException e) {
            unlockAfterFailedLock(task.pid);
            if (CudaErrors.errno(e) == Errno.ETIMEDOUT) {
                throw new CriuException(Errno.ETIMEDOUT, "pid " + task.pid + ": CUDA lock did not finish within "
                        + lockTimeoutMs + " ms (criu --timeout); the task was left running and the dump is aborted");
            }
            throw new CriuException(CudaErrors.errno(e), "pid " + task.pid + ": CUDA lock failed: " + e.getMessage()
                    + "; the task was left running");
        }
    }

    private void unlockAfterFailedLock(int pid) {
        try {
            if (backend.state(pid) == CudaState.LOCKED) backend.unlock(pid);
        } catch (CudaCallException e) {
            log.error("pid {}: could not unlock after a failed lock ({}); its CUDA calls may block until "
                    + "`criu-gpu cuda --action unlock --pid {}`", pid, e.getMessage(), pid);
        }
    }

    int checkpoint(int pid) {
        CudaTask task = tasks.get(pid);
        if (task == null) return notPaused(pid);
        if (task.checkpointStarted) return 0;
        if (!memoryRecorded) recordMemory();
        task.checkpointStarted = true;
        try {
            if (Transitions.needsCheckpoint(task.initial)) {
                woken.add(RestoreThreads.wake(pid, task.restoreTid));
                work.submit(pid, () -> checkpointOnWorker(task));
            } else {
                try {
                    writeRecord(task);
                } catch (IOException e) {
                    throw new CriuException(Errno.EIO, "pid " + pid + ": cannot write its CUDA record: " + e.getMessage());
                }
            }
            if (allCheckpointsStarted()) finishCheckpoints();
        } catch (RuntimeException e) {
            finishQuietly();
            throw e;
        }
        return 0;
    }

    /**
     * Once, when every CUDA task is locked and none checkpointed yet: the device memory each holds, so a restore can
     * tell beforehand whether its target GPUs have room.
     */
    private void recordMemory() {
        memoryRecorded = true;
        if (tasks.values().stream().allMatch(t -> t.gpus.isEmpty())) return;
        long t0 = System.nanoTime();
        GpuMemory.usedByPid().ifPresent(used -> {
            for (CudaTask t : tasks.values()) t.usedMib = used.getOrDefault(t.pid, Map.of());
            log.debug("GPU memory of the CUDA tasks read in {} ms", (System.nanoTime() - t0) / 1_000_000);
        });
    }

    private int notPaused(int pid) {
        if (withoutCuda.contains(pid)) return Errno.NOT_SUPPORTED;
        try {
            if (backend.restoreThread(pid).isEmpty()) {
                withoutCuda.add(pid);
                return Errno.NOT_SUPPORTED;
            }
        } catch (CudaCallException e) {
            throw CudaErrors.of(pid, "querying its CUDA state", e);
        }
        throw new CriuException(Errno.EIO, "pid " + pid + " holds CUDA state but was frozen without being locked first "
                + "(a criu without set_compel_interrupt_only_mode used with --freeze-cgroup?)");
    }

    private void checkpointOnWorker(CudaTask task) throws CudaCallException, IOException {
        long t0 = System.nanoTime();
        try {
            backend.checkpoint(task.pid);
            task.current = CudaState.CHECKPOINTED;
        } catch (CudaCallException e) {
            try {
                task.current = backend.state(task.pid);
            } catch (CudaCallException ignored) {
                task.current = CudaState.CHECKPOINTED; // unknown: assume the most to undo
            }
            throw e;
        }
        log.info("pid {}: CUDA checkpointed in {} ms", task.pid, (System.nanoTime() - t0) / 1_000_000);
        writeRecord(task);
    }

    private void writeRecord(CudaTask task) throws IOException {
        Path dir = services.imageDir().orElseThrow(() -> new IOException("criu gave no images directory"));
        CudaTaskEntry.Builder b = CudaTaskEntry.newBuilder().setPid(task.nsPid).setInitialState(task.initial.value)
                .setBackend(backend.name());
        if (backend instanceof DriverBackend d) b.setDriverApi(d.apiVersion());
        for (GpuInfo g : task.gpus) {
            b.addGpus(entry(g).setUsedMib(task.usedMib.getOrDefault(g.uuid(), 0L)));
        }
        for (GpuInfo g : task.visible) b.addVisible(entry(g));
        CudaTaskImages.write(dir, b.build());
    }

    private static CudaGpuEntry.Builder entry(GpuInfo g) {
        return CudaGpuEntry.newBuilder().setUuid(g.uuid().text()).setModel(g.model()).setMinor(g.minor());
    }

    private boolean allCheckpointsStarted() {
        return tasks.values().stream().noneMatch(t -> !t.checkpointStarted && Procs.alive(t.pid));
    }

    /** Joins every checkpoint, re-stops every woken restore thread, and reports the first failure. */
    private void finishCheckpoints() {
        List<TaskWork.Failure> failures = work.joinAll();
        List<String> restopErrors = restopAll();
        if (failures.isEmpty() && restopErrors.isEmpty()) return;
        for (TaskWork.Failure f : failures.subList(Math.min(1, failures.size()), failures.size())) {
            log.error("pid {}: CUDA checkpoint failed: {}", f.pid(), CudaErrors.describe(f.cause()));
        }
        String first = failures.isEmpty() ? restopErrors.getFirst()
                : "pid " + failures.getFirst().pid() + ": CUDA checkpoint failed: " + CudaErrors.describe(failures.getFirst().cause());
        int errno = !failures.isEmpty() && failures.getFirst().cause() instanceof CudaCallException c ? CudaErrors.errno(c) : Errno.EIO;
        int more = failures.size() + restopErrors.size() - 1;
        throw new CriuException(errno, first + (more > 0 ? " (and " + more + " more, see above)" : ""));
    }

    private List<String> restopAll() {
        List<String> errors = new ArrayList<>();
        for (RestoreThreads.Woken w : woken) {
            try {
                RestoreThreads.restop(w);
            } catch (CriuException e) {
                log.error("{}", e.getMessage());
                errors.add(e.getMessage());
            }
        }
        woken.clear();
        return errors;
    }

    private void finishQuietly() {
        for (TaskWork.Failure f : work.joinAll()) {
            log.error("pid {}: CUDA checkpoint failed: {}", f.pid(), CudaErrors.describe(f.cause()));
        }
        restopAll();
    }

    /** criu's plugin exit for the dump: {@code ret} 0 = success; {@code treeSurvives} from criu's options. */
    void exit(int ret, boolean treeSurvives) {
        if (!work.idle() || !woken.isEmpty()) finishQuietly();
        List<CudaTask> touched = tasks.values().stream().filter(CudaTask::touched).toList();
        switch (DumpEnding.decide(ret, !touched.isEmpty(), treeSurvives)) {
            case NOTHING -> { }
            case RESTORE_NOW -> returnNow(touched, ret != 0 ? "the dump failed" : "criu leaves the tree alive");
            case GUARD -> guard(touched);
        }
    }

    private void returnNow(List<CudaTask> touched, String why) {
        log.info("{}: returning {} CUDA task(s) to their state before the dump", why, touched.size());
        for (CudaTask t : touched) {
            List<CudaAction> steps = Transitions.returnSteps(t.initial, t.current);
            RestoreThreads.Woken w = null;
            try {
                w = RestoreThreads.wake(t.pid, t.restoreTid);
            } catch (CriuException e) {
                log.debug("pid {}: restore thread not woken ({}); the task is not held by criu", t.pid, e.getMessage());
            }
            if (w != null) woken.add(w);
            work.submit(t.pid, () -> {
                for (CudaAction a : steps) {
                    if (a == CudaAction.RESTORE) {
                        backend.prepareRestore();
                        backend.restore(t.pid, List.of());
                    }
                    else backend.unlock(t.pid);
                }
                t.current = t.initial;
            });
        }
        for (TaskWork.Failure f : work.joinAll()) {
            log.error("pid {}: could not return it to its CUDA state before the dump: {}; run `criu-gpu cuda "
                    + "--toggle --pid {}` or the matching --action by hand", f.pid(), CudaErrors.describe(f.cause()), f.pid());
        }
        restopAll();
    }

    private void guard(List<CudaTask> touched) {
        if (!guard) {
            log.info("criu will kill the dumped tree; no guardian (CRIU_CUDA_GUARD=0): if a post-dump script resumes "
                    + "it instead, return its CUDA tasks with `criu-gpu cuda --toggle --pid PID`");
            return;
        }
        Path logFile = services.imageDir().map(d -> d.resolve("cuda-plugin-guard.log")).orElse(Path.of("/dev/null"));
        try {
            GuardianLauncher.launch(ProcessHandle.current().pid(), backend, touched.stream()
                    .map(t -> new GuardianLauncher.GuardedTask(t.pid, t.startTime, t.initial)).toList(), logFile);
            log.info("criu will kill the dumped tree unless a post-dump action resumes it; a guardian returns {} CUDA "
                    + "task(s) if they outlive criu (log: {})", touched.size(), logFile);
        } catch (IOException e) {
            log.warn("cannot start the CUDA guardian ({}): if a post-dump script resumes the tree, return its CUDA "
                    + "tasks with `criu-gpu cuda --toggle --pid PID`", e.getMessage());
        }
    }
}

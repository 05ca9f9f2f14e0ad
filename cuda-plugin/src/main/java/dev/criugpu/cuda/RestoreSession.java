package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.Tasks;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.GpuMapping;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.gpu.TaskGpuRecord;
import dev.criugpu.cuda.image.CudaGpuEntry;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.ptrace.RestoreThreads;
import dev.criugpu.cuda.state.CudaAction;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.Transitions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;

/**
 * One {@code criu restore}, from the first RESUME_DEVICES_LATE on. The tasks to restore are known from our
 * records; each call wakes that task's restore thread (hook thread) and starts its restore (worker); the call
 * that starts the last one joins all and re-stops every restore thread. criu ignores this hook's errors, so every
 * failure is logged as an error line naming the pid.
 */
final class RestoreSession {
    private static final Logger log = LoggerFactory.getLogger(RestoreSession.class);

    private final CudaBackend backend;
    private final boolean legacy;
    private final Map<Integer, CudaTaskEntry> byNsPid = new HashMap<>();
    private final Set<Integer> pending = new LinkedHashSet<>();
    private final Set<Integer> started = new LinkedHashSet<>();
    private final TaskWork work;
    private final List<RestoreThreads.Woken> woken = new ArrayList<>();
    private final GpuMapping mapping;
    private final String planError;
    private final List<GpuInfo> hostGpus;

    /**
     * @param records our per-task records from the images directory
     * @param treePids the pids of pstree.img (to ignore records of other dumps), or null when unknown
     * @param legacy the image predates the inventory plugins list and has no records: find CUDA tasks by asking
     */
    RestoreSession(CudaBackend backend, List<CudaTaskEntry> records, Set<Integer> treePids, boolean legacy,
                   List<GpuInfo> present, List<GpuInfo> host, Map<GpuUuid, GpuUuid> explicitMap, boolean parallel) {
        this.backend = backend;
        this.legacy = legacy && records.isEmpty();
        this.work = new TaskWork(parallel);
        this.hostGpus = List.copyOf(host);
        List<GpuInfo> recorded = new ArrayList<>();
        for (CudaTaskEntry e : records) {
            if (treePids != null && !treePids.contains(e.getPid())) {
                log.warn("cuda-plugin-{}.img belongs to no task of this image (left from another dump?); ignored", e.getPid());
                continue;
            }
            byNsPid.put(e.getPid(), e);
            CudaState initial = initialOf(e);
            if (!Transitions.returnSteps(initial, CudaState.CHECKPOINTED).isEmpty()) pending.add(e.getPid());
            recorded.addAll(gpusOf(e).checkpointed());
        }
        GpuMapping plan = null;
        String error = null;
        try {
            plan = GpuMapping.plan(recorded, present, explicitMap);
            if (plan.remaps()) {
                log.info("GPU map for restore: {}", plan.asMap());
                if (!backend.supportsGpuRemap()) {
                    error = "its GPUs must move (" + plan.asMap() + ") but " + backend.describe()
                            + " cannot remap GPUs (needs r580: driver API 13000+ or cuda-checkpoint --device-map)";
                }
            }
            if (error == null) error = roomError(plan, present);
        } catch (IllegalArgumentException e) {
            error = e.getMessage();
        }
        this.mapping = plan;
        this.planError = error;
    }

    /**
     * Whether each target GPU has room for the device memory the dump recorded for the tasks going there; null when
     * it has (or when nothing was recorded or nvidia-smi cannot say), else one line naming the GPU and the figures.
     */
    private String roomError(GpuMapping plan, List<GpuInfo> present) {
        Map<GpuUuid, Long> need = new java.util.LinkedHashMap<>();
        Map<GpuUuid, List<Integer>> who = new java.util.LinkedHashMap<>();
        for (int nsPid : pending) {
            for (CudaGpuEntry g : byNsPid.get(nsPid).getGpusList()) {
                if (g.getUsedMib() <= 0) continue;
                GpuUuid to = plan.asMap().get(GpuUuid.parse(g.getUuid()));
                need.merge(to, g.getUsedMib(), Long::sum);
                who.computeIfAbsent(to, k -> new ArrayList<>()).add(nsPid);
            }
        }
        if (need.isEmpty()) return null;
        Map<GpuUuid, Long> free = dev.criugpu.cuda.gpu.GpuMemory.freeMib().orElse(Map.of());
        for (var e : need.entrySet()) {
            Long room = free.get(e.getKey());
            if (room == null || room >= e.getValue()) continue;
            String model = present.stream().filter(g -> g.uuid().equals(e.getKey())).map(GpuInfo::model).findFirst().orElse("?");
            return "GPU " + e.getKey() + " (" + model + ") has " + room + " MiB free but the task(s) " + who.get(e.getKey())
                    + " going there held " + e.getValue() + " MiB at dump: too small to restore onto";
        }
        return null;
    }

    /** Why this restore cannot give the tasks their GPU state back, found before any task is created. */
    java.util.Optional<String> blockingError() {
        return planError == null || pending.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(planError);
    }

    /** The record's GPUs: those it held memory on at dump are the checkpointed ones (see {@link TaskGpuRecord#of}). */
    static TaskGpuRecord gpusOf(CudaTaskEntry e) {
        Map<GpuInfo, Long> mapped = new java.util.LinkedHashMap<>();
        for (CudaGpuEntry g : e.getGpusList()) mapped.put(gpu(g), g.getUsedMib());
        return TaskGpuRecord.of(mapped, e.getVisibleList().stream().map(RestoreSession::gpu).toList());
    }

    private static GpuInfo gpu(CudaGpuEntry g) {
        return new GpuInfo(GpuUuid.parse(g.getUuid()), g.getMinor(), g.getModel(), "");
    }

    private static CudaState initialOf(CudaTaskEntry e) {
        return CudaState.ofValue(e.getInitialState()).orElseThrow(() -> new CriuException(Errno.EINVAL,
                "cuda-plugin-" + e.getPid() + ".img: unknown initial state " + e.getInitialState()));
    }

    int resume(int pid) {
        int nsPid = Tasks.innermostPid(pid);
        CudaTaskEntry entry = byNsPid.get(nsPid);
        if (entry == null) return legacy ? resumeLegacy(pid) : Errno.NOT_SUPPORTED;
        if (!started.add(nsPid)) return 0;
        CriuException failure = null;
        try {
            start(pid, entry);
        } catch (CriuException e) {
            failure = e;
        }
        pending.remove(nsPid);
        if (pending.isEmpty()) {
            try {
                finish();
            } catch (CriuException e) {
                if (failure == null) failure = e;
                else log.error("{}", e.getMessage());
            }
        }
        if (failure != null) throw failure;
        return 0;
    }

    /** Wakes the task's restore thread and starts its restore on a worker (or notes there is nothing to do). */
    private void start(int pid, CudaTaskEntry entry) {
        CudaState initial = initialOf(entry);
        List<CudaAction> steps = Transitions.returnSteps(initial, CudaState.CHECKPOINTED);
        if (steps.isEmpty()) {
            log.info("pid {} was checkpointed by its user before the dump; it is left checkpointed", pid);
            return;
        }
        if (planError != null) throw new CriuException(Errno.ENODEV, "pid " + pid + ": " + planError);
        List<GpuPair> pairs = mapping.pairsFor(gpusOf(entry), hostGpus);
        OptionalInt tid = restoreThread(pid);
        if (tid.isEmpty()) {
            throw new CriuException(Errno.EIO, "pid " + pid + " was restored without a CUDA restore thread; "
                    + "its GPU state cannot be restored");
        }
        woken.add(RestoreThreads.wake(pid, tid.getAsInt()));
        work.submit(pid, () -> restoreOnWorker(pid, pairs, steps));
    }

    private OptionalInt restoreThread(int pid) {
        try {
            return backend.restoreThread(pid);
        } catch (CudaCallException e) {
            throw CudaErrors.of(pid, "querying its CUDA restore thread", e);
        }
    }

    private void restoreOnWorker(int pid, List<GpuPair> pairs, List<CudaAction> steps) throws CudaCallException {
        long t0 = System.nanoTime();
        backend.prepareRestore();
        backend.restore(pid, pairs);
        long t1 = System.nanoTime();
        if (steps.contains(CudaAction.UNLOCK)) backend.unlock(pid);
        log.info("pid {}: CUDA restored in {} ms{}{}", pid, (t1 - t0) / 1_000_000,
                steps.contains(CudaAction.UNLOCK) ? ", unlocked in " + (System.nanoTime() - t1) / 1_000_000 + " ms" : " (left locked, as at dump)",
                pairs.isEmpty() ? "" : " onto " + pairs);
    }

    /** An image from before the inventory plugins list: only the driver can say which tasks hold CUDA state. */
    private int resumeLegacy(int pid) {
        OptionalInt tid = restoreThread(pid);
        if (tid.isEmpty()) return Errno.NOT_SUPPORTED;
        try {
            if (backend.state(pid) != CudaState.CHECKPOINTED) return 0;
        } catch (CudaCallException e) {
            throw CudaErrors.of(pid, "querying its CUDA state", e);
        }
        RestoreThreads.Woken w = RestoreThreads.wake(pid, tid.getAsInt());
        try {
            restoreOnWorker(pid, List.of(), List.of(CudaAction.RESTORE, CudaAction.UNLOCK));
        } catch (CudaCallException e) {
            throw CudaErrors.of(pid, "CUDA restore", e);
        } finally {
            RestoreThreads.restop(w);
        }
        return 0;
    }

    private void finish() {
        List<TaskWork.Failure> failures = work.joinAll();
        List<String> errors = new ArrayList<>();
        for (TaskWork.Failure f : failures) {
            errors.add("pid " + f.pid() + ": CUDA restore failed: " + CudaErrors.describe(f.cause())
                    + "; its CUDA calls stay blocked");
        }
        for (RestoreThreads.Woken w : woken) {
            try {
                RestoreThreads.restop(w);
            } catch (CriuException e) {
                errors.add(e.getMessage());
            }
        }
        woken.clear();
        if (errors.isEmpty()) return;
        errors.stream().skip(1).forEach(e -> log.error("{}", e));
        throw new CriuException(Errno.EIO, errors.getFirst() + (errors.size() > 1 ? " (and " + (errors.size() - 1) + " more, see above)" : ""));
    }

    /** criu's plugin exit: anything still outstanding (a recorded task never came) is joined and logged. */
    void exit() {
        if (work.idle() && woken.isEmpty()) return;
        try {
            finish();
        } catch (CriuException e) {
            log.error("{}", e.getMessage());
        }
    }
}

package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.RestoreFailure;
import dev.criugpu.api.sys.Tasks;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.GpuMapping;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.gpu.TaskGpuRecord;
import dev.criugpu.cuda.hostcopy.HostCopyFill;
import dev.criugpu.cuda.hostcopy.HostCopyImages;
import dev.criugpu.cuda.image.CudaGpuEntry;
import dev.criugpu.cuda.image.CudaHostCopyEntry;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.state.CudaAction;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.TaskReturn;
import dev.criugpu.cuda.state.Transitions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * One {@code criu restore}, from the first RESUME_DEVICES_LATE on. A task with a record of ours
 * ({@code cuda-plugin-<pid>.img}) is restored as the record says. A task without one — every task of an image
 * dumped by upstream's plugin or by an older criu, and any task of a tree where some have records — is asked:
 * the driver's answer decides (CHECKPOINTED: restore and unlock; LOCKED: unlock; no CUDA: nothing, and no error).
 * Each call wakes the task's restore thread (hook thread) and starts its work (worker); the call for the last task
 * criu resumes joins all and re-stops every restore thread. criu ignores this hook's result, so a task whose CUDA
 * state cannot be restored is killed ({@link RestoreFailure}): criu then fails the whole restore.
 */
final class RestoreSession {
    private static final Logger log = LoggerFactory.getLogger(RestoreSession.class);

    private final CudaDeps deps;
    private final CudaBackend backend;
    private final Map<Integer, CudaTaskEntry> byNsPid = new HashMap<>();
    /** Tasks (namespace pids) still to come in RESUME_DEVICES_LATE whose CUDA state may need work. */
    private final Set<Integer> pending = new LinkedHashSet<>();
    private final Set<Integer> started = new LinkedHashSet<>();
    private final WokenWork work;
    private final GpuMapping mapping;
    private final String planError;
    private final List<GpuInfo> hostGpus;
    private final List<GpuPair> unrecordedPairs;
    /** The GPUs each task's restore moves (pid: pairs whose old and new GPU differ), for its failure line. */
    private final Map<Integer, List<GpuPair>> moves = new java.util.concurrent.ConcurrentHashMap<>();
    private final Map<Integer, CudaHostCopyEntry> hostCopies = new HashMap<>();
    private java.nio.file.Path imageDir;
    private HostCopyFill fill;
    private int fillThreads = 1;

    /**
     * @param records our per-task records from the images directory
     * @param resumed the tasks criu will resume (pstree.img pids whose core image says alive), or null when unknown
     * @param unrecordedMayHoldCuda the image may hold CUDA state outside our records (the inventory lists
     *                              cuda_plugin, or predates the plugins field): ask the driver about the other tasks
     */
    RestoreSession(CudaDeps deps, List<CudaTaskEntry> records, Set<Integer> resumed, boolean unrecordedMayHoldCuda,
                   List<GpuInfo> present, List<GpuInfo> host, Map<GpuUuid, GpuUuid> explicitMap, boolean parallel) {
        this(deps, records, resumed, unrecordedMayHoldCuda, present, host, explicitMap, parallel, GpuMemory::freeMib);
    }

    /** @param freeMib each GPU's free memory, for the room check (asked when init began, in the plugin) */
    RestoreSession(CudaDeps deps, List<CudaTaskEntry> records, Set<Integer> resumed, boolean unrecordedMayHoldCuda,
                   List<GpuInfo> present, List<GpuInfo> host, Map<GpuUuid, GpuUuid> explicitMap, boolean parallel,
                   java.util.function.Supplier<Optional<Map<GpuUuid, Long>>> freeMib) {
        this.deps = deps;
        this.backend = deps.backend();
        this.work = new WokenWork(deps.threads(), parallel);
        this.hostGpus = List.copyOf(host);
        List<GpuInfo> recorded = new ArrayList<>();
        for (CudaTaskEntry e : records) {
            if (resumed != null && !resumed.contains(e.getPid())) {
                log.warn("cuda-plugin-{}.img belongs to no task this restore resumes (left from another dump?); ignored", e.getPid());
                continue;
            }
            byNsPid.put(e.getPid(), e);
            if (!Transitions.returnSteps(initialOf(e), CudaState.CHECKPOINTED).isEmpty()) pending.add(e.getPid());
            recorded.addAll(gpusOf(e).checkpointed());
        }
        if (unrecordedMayHoldCuda && resumed != null) {
            for (int p : resumed) if (!byNsPid.containsKey(p)) pending.add(p);
        }
        GpuMapping plan = null;
        String error = null;
        List<GpuPair> unrecorded = List.of();
        try {
            plan = GpuMapping.plan(recorded, present, explicitMap);
            if (plan.remaps()) {
                log.info("GPU map for restore: {}", plan.asMap());
                if (!backend.supportsGpuRemap()) error = cannotRemap(plan.asMap());
            }
            if (error == null) error = RestoreRoom.check(pending, byNsPid, plan, present, freeMib);
            unrecorded = GpuMapping.explicitPairs(explicitMap, present);
            if (error == null && !unrecorded.isEmpty() && !backend.supportsGpuRemap()) error = cannotRemap(explicitMap);
        } catch (IllegalArgumentException e) {
            error = e.getMessage();
        }
        this.mapping = plan;
        this.planError = error;
        this.unrecordedPairs = unrecorded;
    }

    private String cannotRemap(Map<GpuUuid, GpuUuid> map) {
        return "its GPUs must move (" + map + ") but " + backend.describe()
                + " cannot remap GPUs (needs r580: driver API 13000+ or cuda-checkpoint --device-map)";
    }

    /**
     * The tasks' host copies to put back before their CUDA restore ({@link HostCopyImages}); each must belong to a task
     * with a record of ours that this restore resumes.
     */
    void hostCopies(java.nio.file.Path imageDir, Map<Integer, CudaHostCopyEntry> records, int threads) {
        for (int nsPid : records.keySet()) {
            if (!byNsPid.containsKey(nsPid)) {
                throw new CriuException(Errno.EINVAL, "cuda-hostcopy-" + nsPid + ".img: the host copy of a task without a "
                        + "CUDA record this restore resumes; the images are not one dump's");
            }
        }
        this.imageDir = imageDir;
        this.hostCopies.putAll(records);
        this.fillThreads = threads;
    }

    /** The copying threads, started by the first task that needs them (never in the restore probe). */
    private synchronized HostCopyFill fill() {
        if (fill == null) fill = new HostCopyFill(fillThreads);
        return fill;
    }

    /** Why this restore cannot give the tasks their GPU state back, found before any task is created. */
    Optional<String> blockingError() {
        return planError == null || pending.isEmpty() ? Optional.empty() : Optional.of(planError);
    }

    /** The record's GPUs: those it held memory on at dump are the checkpointed ones (see {@link TaskGpuRecord#of}). */
    static TaskGpuRecord gpusOf(CudaTaskEntry e) {
        Map<GpuInfo, Long> mapped = new LinkedHashMap<>();
        for (CudaGpuEntry g : e.getGpusList()) mapped.put(gpu(g), g.getUsedMib());
        return TaskGpuRecord.of(mapped, e.getVisibleList().stream().map(RestoreSession::gpu).toList());
    }

    static GpuInfo gpu(CudaGpuEntry g) {
        return new GpuInfo(GpuUuid.parse(g.getUuid()), g.getMinor(), g.getModel(), "");
    }

    static CudaState initialOf(CudaTaskEntry e) {
        return CudaState.ofValue(e.getInitialState()).orElseThrow(() -> new CriuException(Errno.EINVAL,
                "cuda-plugin-" + e.getPid() + ".img: unknown initial state " + e.getInitialState()));
    }

    int resume(int pid) {
        int nsPid = Tasks.innermostPid(pid);
        CudaTaskEntry entry = byNsPid.get(nsPid);
        if (entry == null && !pending.contains(nsPid)) return Errno.NOT_SUPPORTED;
        if (!started.add(nsPid)) return 0;
        boolean mine = true;
        CriuException failure = null;
        try {
            mine = entry != null ? startRecorded(pid, entry) : startUnrecorded(pid);
        } catch (CriuException e) {
            failure = RestoreFailure.killTask(pid, e.getMessage().replaceFirst("^pid " + pid + ": ", ""));
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
        return mine ? 0 : Errno.NOT_SUPPORTED;
    }

    /** A task our dump recorded: restore what it recorded. */
    private boolean startRecorded(int pid, CudaTaskEntry entry) {
        List<CudaAction> steps = Transitions.returnSteps(initialOf(entry), CudaState.CHECKPOINTED);
        CudaHostCopyEntry hostCopy = hostCopies.get(entry.getPid());
        if (steps.isEmpty()) {
            if (hostCopy != null) putBack(pid, hostCopy);
            log.info("pid {} was checkpointed by its user before the dump; it is left checkpointed", pid);
            return true;
        }
        if (planError != null) throw new CriuException(Errno.ENODEV, "pid " + pid + ": " + planError);
        List<GpuPair> pairs = mapping.pairsFor(gpusOf(entry), hostGpus);
        OptionalInt tid = restoreThread(pid);
        if (tid.isEmpty()) {
            throw new CriuException(Errno.EIO, "pid " + pid + ": restored without a CUDA restore thread, so its "
                    + "CUDA state cannot be restored");
        }
        work.wake(pid, tid.getAsInt());
        work.submit(pid, () -> {
            if (hostCopy != null) putBack(pid, hostCopy);
            restoreOnWorker(pid, pairs, steps);
        });
        return true;
    }

    /** The task's host copy back in its memory, where its CUDA restore reads it. */
    private void putBack(int pid, CudaHostCopyEntry hostCopy) {
        long t0 = System.nanoTime();
        try {
            long bytes = fill().fill(imageDir, hostCopy, pid);
            long ms = Math.max(1, (System.nanoTime() - t0) / 1_000_000);
            log.info("pid {}: host copy put back, {} MiB in {} ms ({} MiB/s)", pid, bytes >> 20, ms, (bytes >> 20) * 1000 / ms);
        } catch (java.io.IOException e) {
            throw new CriuException(Errno.EIO, "pid " + pid + ": its host copy of device memory cannot be put back: " + e.getMessage());
        }
    }

    /**
     * A task without a record (upstream's images keep none): the driver says what it needs. Only the restore-thread
     * query is answered while criu holds the task stopped; every other call is served by that thread, so it is woken
     * first and the state is asked on the worker.
     */
    private boolean startUnrecorded(int pid) {
        OptionalInt tid = restoreThread(pid);
        if (tid.isEmpty()) {
            log.debug("pid {} has no CUDA state", pid);
            return false;
        }
        work.wake(pid, tid.getAsInt());
        work.submit(pid, () -> restoreUnrecorded(pid));
        return true;
    }

    private void restoreUnrecorded(int pid) throws CudaCallException {
        CudaState state = backend.state(pid);
        List<CudaAction> steps = switch (state) {
            case CHECKPOINTED -> List.of(CudaAction.RESTORE, CudaAction.UNLOCK);
            case LOCKED -> List.of(CudaAction.UNLOCK);
            case RUNNING -> List.of();
            case FAILED -> throw new IllegalStateException("its CUDA state is FAILED");
        };
        if (steps.isEmpty()) {
            log.info("pid {} holds running CUDA state; nothing to restore", pid);
            return;
        }
        if (planError != null) throw new IllegalStateException(planError);
        log.info("pid {} has no CUDA record (an image of upstream's plugin or an older criu); the driver says {}",
                pid, state.word());
        restoreOnWorker(pid, steps.contains(CudaAction.RESTORE) ? unrecordedPairs : List.of(), steps);
    }

    private OptionalInt restoreThread(int pid) {
        try {
            return backend.restoreThread(pid);
        } catch (CudaCallException e) {
            throw CudaErrors.of(pid, "querying its CUDA restore thread", e);
        }
    }

    private void restoreOnWorker(int pid, List<GpuPair> pairs, List<CudaAction> steps) throws CudaCallException {
        List<GpuPair> moved = pairs.stream().filter(p -> !p.oldUuid().equals(p.newUuid())).toList();
        if (steps.contains(CudaAction.RESTORE) && !moved.isEmpty()) moves.put(pid, moved);
        long t0 = System.nanoTime();
        if (steps.contains(CudaAction.RESTORE)) TaskReturn.apply(backend, pid, List.of(CudaAction.RESTORE), pairs);
        long t1 = System.nanoTime();
        if (steps.contains(CudaAction.UNLOCK)) TaskReturn.apply(backend, pid, List.of(CudaAction.UNLOCK), List.of());
        log.info("pid {}: CUDA {} in {} ms{}{}", pid, steps.contains(CudaAction.RESTORE) ? "restored" : "found locked",
                (t1 - t0) / 1_000_000,
                steps.contains(CudaAction.UNLOCK) ? ", unlocked in " + (System.nanoTime() - t1) / 1_000_000 + " ms" : " (left locked, as at dump)",
                pairs.isEmpty() ? "" : " onto " + pairs);
    }

    /** Joins every restore, re-stops every restore thread; a task whose restore failed is killed. */
    private void finish() {
        WokenWork.Ended ended = work.finish("the CUDA restore");
        closeFill();
        List<String> errors = new ArrayList<>();
        for (TaskWork.Failure f : ended.failures()) {
            errors.add(RestoreFailure.killTask(f.pid(), "CUDA restore failed" + movedOnto(f.pid()) + ": "
                    + CudaErrors.describe(f.cause())).getMessage());
        }
        errors.addAll(ended.restopErrors());
        if (errors.isEmpty()) return;
        throw WokenWork.firstOf(Errno.EIO, errors);
    }

    /** Where a failed restore was moving the task's GPUs (a driver may refuse a move it allows elsewhere): the GPUs by UUID. */
    private String movedOnto(int pid) {
        List<GpuPair> moved = moves.getOrDefault(pid, List.of());
        if (moved.isEmpty()) return "";
        return " moving its GPUs " + String.join(", ", moved.stream().map(p -> p.oldUuid() + " (dump) to " + p.newUuid()).toList());
    }

    private synchronized void closeFill() {
        if (fill != null) fill.close();
        fill = null;
    }

    /** criu's plugin exit: anything still outstanding (a task criu never resumed) is joined and logged. */
    void exit() {
        closeFill();
        if (!work.underWay()) return;
        try {
            finish();
        } catch (CriuException e) {
            log.error("{}", e.getMessage());
        }
    }
}

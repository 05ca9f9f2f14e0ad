package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Errno;
import dev.criugpu.api.Interrupts;
import dev.criugpu.api.Threads;
import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.sys.Tasks;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.TaskGpus;
import dev.criugpu.cuda.agent.WatchedTask;
import dev.criugpu.cuda.agent.AgentLink;
import dev.criugpu.cuda.sys.RestoreThreadControl;
import dev.criugpu.cuda.image.CudaGpuEntry;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.image.CudaTaskImages;
import dev.criugpu.api.sys.ProcStat;
import dev.criugpu.api.sys.ProcessTree;
import dev.criugpu.cuda.state.CudaAction;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.DumpEnding;
import dev.criugpu.cuda.state.TaskReturn;
import dev.criugpu.cuda.state.Transitions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * One {@code criu dump}. PAUSE_DEVICES finds each CUDA task while the tree runs, hands it to the CUDA agent's watch and locks
 * it; CHECKPOINT_DEVICES wakes each task's restore thread (hook thread) and starts its
 * checkpoint (worker), and the call for the last CUDA task joins every checkpoint and re-stops every restore thread
 * (hook thread); exit puts tasks back when the tree survives. Every wait gives up when criu is told to stop.
 */
final class DumpSession {
    private static final Logger log = LoggerFactory.getLogger(DumpSession.class);
    /** How long criu's exit keeps trying to return a task through its own backend after the agent died. */
    static final long FALLBACK_GIVE_UP_MS = 60_000;
    static final String AGENT_LOG = "cuda-plugin-watchdog.log";

    private final CriuServices services;
    private final CudaDeps deps;
    private final int lockTimeoutMs;
    private final List<GpuInfo> presentGpus;
    private final WokenWork work;
    private final Map<Integer, CudaTask> tasks = new LinkedHashMap<>();
    private final Set<Integer> withoutCuda = new HashSet<>();
    private CudaBackend fallback;
    /** {@link #FALLBACK_GIVE_UP_MS}; shorter in tests of a driver that keeps refusing. */
    long fallbackGiveUpMs = FALLBACK_GIVE_UP_MS;
    private boolean watched;
    /** Lock the job's CUDA tasks together at the first PAUSE_DEVICES (CRIU_CUDA_QUIESCE, default on). */
    private final boolean quiesceJob;
    private boolean jobQuiesced;
    private boolean inventoryAdded;
    private boolean memoryRecorded;
    private java.util.Optional<String> unavailable;
    /** nvidia-smi's view of the tasks' device memory, asked at the first CUDA task while the locks go on. */
    private java.util.concurrent.CompletableFuture<java.util.Optional<Map<Integer, Map<dev.criugpu.cuda.gpu.GpuUuid, Long>>>> memory;

    /** Call {@link #removeStaleFiles} before the agent is started: it creates its log anew. */
    DumpSession(CriuServices services, CudaDeps deps, int lockTimeoutMs, List<GpuInfo> presentGpus, boolean parallel) {
        this(services, deps, lockTimeoutMs, presentGpus, parallel, false);
    }

    DumpSession(CriuServices services, CudaDeps deps, int lockTimeoutMs, List<GpuInfo> presentGpus, boolean parallel,
                boolean quiesceJob) {
        this.quiesceJob = quiesceJob;
        this.services = services;
        this.deps = deps;
        this.lockTimeoutMs = lockTimeoutMs;
        this.presentGpus = presentGpus;
        this.work = new WokenWork(deps.threads(), parallel,
                services.faultInjected("no-restop-grace") ? 0 : WokenWork.STOP_GRACE_MS, new AgentMasks());
    }

    /** The dump's single driver seam: the CUDA agent's client, or the in-criu backend with CRIU_CUDA_GUARD=0. */
    private CudaBackend backend() {
        return deps.backend();
    }

    /** What answers for the tasks if criu goes away: the same agent ({@link AgentLink#NONE} without one). */
    private AgentLink agent() {
        return deps.agent();
    }

    static Path agentLog(Path imageDir) {
        return imageDir.resolve(AGENT_LOG);
    }

    /** The log of the second agent, started at criu's exit when the first died. */
    static Path secondAgentLog(Path imageDir) {
        return imageDir.resolve("cuda-plugin-watchdog-2.log");
    }

    /** Records and the agents' logs of an earlier dump into the same directory must not be taken for this one's. */
    static void removeStaleFiles(CriuServices services) {
        services.imageDir().ifPresent(dir -> {
            List<Path> stale = new ArrayList<>(CudaTaskImages.files(dir));
            stale.add(agentLog(dir));
            stale.add(secondAgentLog(dir));
            stale.add(dir.resolve(dev.criugpu.cuda.inherited.InheritedDevices.IMAGE));
            for (Path f : stale) {
                try {
                    ImageFiles.delete(dir, f.getFileName().toString());
                } catch (IOException e) {
                    throw new CriuException(Errno.EIO, f + ": cannot remove what an earlier dump left: " + e.getMessage());
                }
            }
        });
    }

    /** Whether there is a backend to ask (the agent learns it when it is up): without one the plugin stands aside. */
    private boolean available() {
        if (unavailable == null) {
            unavailable = backend().unavailable();
            unavailable.ifPresent(why -> log.info("disabled: {}", why));
            if (unavailable.isEmpty()) log.info("using {}", backend().describe());
        }
        return unavailable.isEmpty();
    }

    int pause(int pid) {
        if (tasks.containsKey(pid)) return 0;
        if (withoutCuda.contains(pid) || !available()) return Errno.NOT_SUPPORTED;
        if (quiesceJob && !jobQuiesced) {
            jobQuiesced = true;
            return quiesce(pid);
        }
        Optional<CudaTask> task = find(pid);
        if (task.isEmpty()) return Errno.NOT_SUPPORTED;
        lockOrLeave(task.get());
        return 0;
    }

    /**
     * The first PAUSE_DEVICES (criu calls it for the tree's root before it seizes anything): every CUDA task of the
     * running tree is found now and, where two or more need a lock, they are locked together ({@link JobQuiesce}), so
     * that ranks waiting on each other's GPU work cannot hold up each other's lock. Their own PAUSE_DEVICES then
     * return at once; a process that appears later is locked by its own call.
     */
    private int quiesce(int root) {
        long t0 = System.nanoTime();
        List<CudaTask> found = new ArrayList<>();
        for (int pid : ProcessTree.of(root)) {
            if (pid != root && !ProcStat.of(pid).map(ProcStat::alive).orElse(false)) continue;
            find(pid).ifPresent(found::add);
        }
        log.debug("{} CUDA task(s) in the tree of pid {} found and watched in {} ms", found.size(), root,
                (System.nanoTime() - t0) / 1_000_000);
        List<CudaTask> toLock = found.stream().filter(t -> Transitions.needsLock(t.initial)).toList();
        if (toLock.size() < 2) {
            found.forEach(this::lockOrLeave);
        } else {
            found.stream().filter(t -> !Transitions.needsLock(t.initial)).forEach(this::lockOrLeave);
            List<JobQuiesce.Member> members = toLock.stream().map(t -> new JobQuiesce.Member(t.pid, t.initial)).toList();
            try {
                for (int pid : new JobQuiesce(backend()).lockAll(members, lockTimeoutMs).pids()) {
                    tasks.get(pid).current = CudaState.LOCKED;
                }
            } catch (CriuException e) {
                // with the agent gone, a lock of the attempt may still land: criu's exit asks the driver and undoes it
                if (agent().gone()) toLock.forEach(t -> t.uncertain = true);
                throw e;
            }
        }
        return tasks.containsKey(root) ? 0 : Errno.NOT_SUPPORTED;
    }

    /** Asks whether {@code pid} holds CUDA state; a CUDA task is recorded (and watched) but not locked yet. */
    private Optional<CudaTask> find(int pid) {
        OptionalInt tid;
        CudaState[] state = new CudaState[1];
        try {
            tid = backend().restoreThread(pid);
            if (tid.isEmpty()) {
                withoutCuda.add(pid);
                log.debug("pid {} has no CUDA state", pid);
                return Optional.empty();
            }
            // served by the task's restore thread: on a task stopped by its user this waits, so interruptibly
            work.runNow(pid, "the CUDA state query", () -> state[0] = backend().state(pid));
        } catch (CudaCallException e) {
            throw CudaErrors.of(pid, "querying its CUDA state", e);
        } catch (CriuException e) {
            throw e;
        } catch (Exception e) {
            throw new CriuException(Errno.EIO, "pid " + pid + ": querying its CUDA state failed: " + e);
        }
        return Optional.of(register(pid, tid.getAsInt(), state[0]));
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
            memory = java.util.concurrent.CompletableFuture.supplyAsync(GpuMemory::usedByPid, Threads.daemonEach("cuda-gpu-memory"));
        }
        tasks.put(pid, task);
        recordsState();
        return task;
    }

    private void lockOrLeave(CudaTask task) {
        if (Transitions.needsLock(task.initial)) {
            lock(task);
        } else {
            log.info("pid {} was already {} before the dump; it is left so afterwards", task.pid, task.initial.word());
        }
    }

    /** The first time the dump saves state of this plugin's: inventory.img lists it, so a restore needs it. */
    void recordsState() {
        if (inventoryAdded) return;
        if (!services.addInventoryPlugin()) {
            log.warn("this criu cannot record {} in inventory.img; a restore will not know it needs this plugin",
                    CudaPlugin.NAME);
        }
        inventoryAdded = true;
    }

    /** Before a task's CUDA state changes: the agent answers for it from now on. */
    private void watch(CudaTask task) {
        try {
            agent().watch(new WatchedTask(task.pid, task.startTime, task.initial));
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

    private void lock(CudaTask task) {
        long t0 = System.nanoTime();
        try {
            work.runNow(task.pid, "the CUDA lock", () -> backend().lock(task.pid, lockTimeoutMs));
        } catch (CriuException e) {
            throw e; // criu was told to stop: the lock goes on in the background and the agent answers for it
        } catch (CudaCallException e) {
            if (e.code() == CudaCallException.AGENT_FAILED) {
                task.uncertain = true; // the lock may land still: criu's exit asks the driver and undoes it
                throw new CriuException(Errno.EIO, "pid " + task.pid + ": CUDA lock failed: " + e.getMessage()
                        + "; the dump is aborted and criu's exit returns the task");
            }
            unlockAfterFailedLock(task);
            if (CudaErrors.errno(e) == Errno.ETIMEDOUT) {
                throw new CriuException(Errno.ETIMEDOUT, "pid " + task.pid + ": CUDA lock did not finish within "
                        + lockTimeoutMs + " ms (criu --timeout); the task was left running and the dump is aborted");
            }
            throw new CriuException(CudaErrors.errno(e), "pid " + task.pid + ": CUDA lock failed: " + e.getMessage()
                    + "; the task was left running");
        } catch (Exception e) {
            unlockAfterFailedLock(task);
            throw new CriuException(Errno.EIO, "pid " + task.pid + ": CUDA lock failed: " + e);
        }
        task.current = CudaState.LOCKED;
        log.info("pid {}: CUDA locked in {} ms (GPUs {})", task.pid, (System.nanoTime() - t0) / 1_000_000,
                task.gpus.stream().map(g -> g.uuid().text()).toList());
    }

    private void unlockAfterFailedLock(CudaTask task) {
        try {
            if (backend().state(task.pid) == CudaState.LOCKED) backend().unlock(task.pid);
        } catch (CudaCallException e) {
            log.error("pid {}: could not unlock after a failed lock ({}); its CUDA calls may block until "
                    + "`criu-gpu cuda --action unlock --pid {}`", task.pid, e.getMessage(), task.pid);
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
                work.wake(pid, task.restoreTid);
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
     * Once, before the first checkpoint moves any device memory: what each task holds on each GPU (asked at the first
     * CUDA task, while the locks went on), so that a restore can tell beforehand whether its target GPUs have room.
     */
    private void recordMemory() {
        memoryRecorded = true;
        if (memory == null) return;
        long t0 = System.nanoTime();
        try {
            Interrupts.await(memory, "nvidia-smi's view of the tasks' GPU memory", GpuMemory.TIMEOUT_S * 1000).ifPresent(used -> {
                for (CudaTask t : tasks.values()) t.usedMib = used.getOrDefault(t.pid, Map.of());
            });
            log.debug("GPU memory of the CUDA tasks known {} ms into the checkpoint", (System.nanoTime() - t0) / 1_000_000);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            log.warn("the GPU memory of the CUDA tasks is not known ({}); a restore cannot check room for them", e.toString());
        }
    }

    private int notPaused(int pid) {
        if (withoutCuda.contains(pid) || !available()) return Errno.NOT_SUPPORTED;
        try {
            if (backend().restoreThread(pid).isEmpty()) {
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
            backend().checkpoint(task.pid);
            task.current = CudaState.CHECKPOINTED;
        } catch (CudaCallException e) {
            if (e.code() == CudaCallException.AGENT_FAILED) {
                task.uncertain = true;
                throw e;
            }
            try {
                task.current = backend().state(task.pid);
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
                .setBackend(backend().name());
        if (backend().apiVersion() > 0) b.setDriverApi(backend().apiVersion());
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
        return tasks.values().stream().noneMatch(t -> !t.checkpointStarted && ProcStat.alive(t.pid));
    }

    /** Joins every checkpoint, re-stops every woken restore thread, and reports the first failure. */
    private void finishCheckpoints() {
        WokenWork.Ended ended = finish("the CUDA checkpoint");
        List<String> errors = new ArrayList<>();
        for (TaskWork.Failure f : ended.failures()) {
            errors.add("pid " + f.pid() + ": CUDA checkpoint failed: " + CudaErrors.describe(f.cause()));
        }
        errors.addAll(ended.restopErrors());
        if (errors.isEmpty()) return;
        List<TaskWork.Failure> failures = ended.failures();
        int errno = !failures.isEmpty() && failures.getFirst().cause() instanceof CudaCallException c ? CudaErrors.errno(c) : Errno.EIO;
        throw WokenWork.firstOf(errno, errors);
    }

    /** The round's end; a restore thread not stopped again is logged at once. */
    private WokenWork.Ended finish(String what) {
        WokenWork.Ended ended = work.finish(what);
        ended.restopErrors().forEach(e -> log.error("{}", e));
        return ended;
    }

    /**
     * The agent hears of every restore thread that runs with our signals blocked, and of its mask given back: if criu
     * dies or ends in between, the agent gives the mask back once criu is gone.
     */
    private final class AgentMasks implements WokenWork.Masks {
        @Override
        public void blocked(RestoreThreadControl.Woken w) {
            try {
                agent().blocked(w.pid(), w.tid(), w.savedMask());
            } catch (IOException e) {
                log.debug("pid {}: could not tell the CUDA agent of restore thread {}: {}", w.pid(), w.tid(), e.getMessage());
            }
        }

        @Override
        public void givenBack(RestoreThreadControl.Woken w) {
            try {
                agent().unblocked(w.pid(), w.tid());
            } catch (IOException e) {
                log.debug("pid {}: could not tell the CUDA agent of restore thread {}: {}", w.pid(), w.tid(), e.getMessage());
            }
        }
    }

    private void finishQuietly() {
        for (TaskWork.Failure f : finish("the CUDA checkpoint").failures()) {
            log.error("pid {}: CUDA checkpoint failed: {}", f.pid(), CudaErrors.describe(f.cause()));
        }
    }

    /**
     * criu's plugin exit for the dump: {@code ret} 0 = success; {@code treeSurvives} from criu's options. True when a
     * task criu leaves alive could not be returned although the dump succeeded: criu must not exit 0 (one error line
     * per task says what to run by hand).
     */
    boolean exit(int ret, boolean treeSurvives) {
        boolean stranded = false;
        try {
            if (work.underWay()) finishQuietly();
            List<CudaTask> touched = tasks.values().stream().filter(CudaTask::touched).toList();
            switch (DumpEnding.decide(ret, !touched.isEmpty(), treeSurvives)) {
                case NOTHING -> { }
                case AGENT_WATCHES -> {
                    if (agent().gone()) watchAgain(touched);
                }
                case RESTORE_NOW -> {
                    List<String> left = returnNow(touched, ret != 0 ? "the dump failed" : "criu leaves the tree alive");
                    left.forEach(log::error);
                    stranded = !left.isEmpty() && ret == 0;
                }
            }
            tellAgentReturned();
        } finally {
            try {
                agent().done();
            } catch (IOException e) {
                if (watched && !agent().gone()) {
                    log.error("{}: if criu resumes the tree instead of killing it, return its CUDA tasks with "
                            + "`criu-gpu cuda --toggle --pid PID`", e.getMessage());
                }
            }
        }
        return stranded;
    }

    /**
     * The agent died and criu will kill the tree — unless a failing post-dump script or an RPC client makes it resume
     * it, or criu dies first: a second agent, started now, watches the touched tasks until criu is gone.
     */
    private void watchAgain(List<CudaTask> touched) {
        try {
            AgentLink second = deps.secondAgent().get();
            for (CudaTask t : touched) second.watch(new WatchedTask(t.pid, t.startTime, t.initial));
            second.done();
            log.warn("the CUDA agent died during the dump; a second one watches pid(s) {} until criu is gone, in case criu "
                    + "leaves them alive", touched.stream().map(t -> t.pid).toList());
        } catch (IOException | RuntimeException e) {
            log.warn("the CUDA agent died during the dump and no second one could be started ({}): criu kills the tree now; "
                    + "if it resumes it instead, return its CUDA tasks with {}", e.getMessage(),
                    touched.stream().map(t -> TaskReturn.byHand(t.pid, t.initial, t.uncertain ? null : t.current)).toList());
        }
    }

    /** Every task criu has (back) in its state before the dump needs nothing more from the agent. */
    private void tellAgentReturned() {
        if (!watched || agent().gone()) return;
        for (CudaTask t : tasks.values()) {
            if (t.touched() || !Transitions.needsCheckpoint(t.initial)) continue;
            try {
                agent().returned(t.pid);
            } catch (IOException e) {
                log.warn("{}", e.getMessage());
                return;
            }
        }
    }

    /**
     * Returns every touched task to its state before the dump, each on a worker with its restore thread awake. A task
     * the agent cannot return because it died — before or during this — goes back through criu's own backend, by the
     * driver's word on its state and kept there for longer than a call the agent left under way could take to land.
     * The lines for the tasks that did not come back are returned.
     */
    private List<String> returnNow(List<CudaTask> touched, String why) {
        log.info("{}: returning {} CUDA task(s) to their state before the dump", why, touched.size());
        Map<Integer, TaskReturn.Outcome> outcomes = new java.util.concurrent.ConcurrentHashMap<>();
        for (CudaTask t : touched) {
            try {
                work.wake(t.pid, t.restoreTid);
            } catch (CriuException e) {
                log.debug("pid {}: restore thread not woken ({}); the task is not held by criu", t.pid, e.getMessage());
            }
            work.submit(t.pid, () -> outcomes.put(t.pid, returnOne(t)));
        }
        List<String> left = new ArrayList<>();
        for (TaskWork.Failure f : finish("returning a CUDA task").failures()) {
            outcomes.put(f.pid(), new TaskReturn.Outcome(TaskReturn.End.GAVE_UP, List.of(), null, CudaErrors.describe(f.cause())));
        }
        for (CudaTask t : touched) {
            TaskReturn.Outcome o = outcomes.get(t.pid);
            if (o != null && o.back()) {
                t.current = t.initial;
                t.uncertain = false;
                continue;
            }
            // the driver's last word, else what criu knows (nothing, when a call was under way as the agent died)
            CudaState last = o != null && o.last() != null ? o.last() : t.uncertain ? null : t.current;
            left.add("pid " + t.pid + ": left " + (last == null ? "in an unknown CUDA state" : last.word()) + ", not "
                    + t.initial.word() + " as before the dump (" + (o == null ? "criu was told to stop" : o.error())
                    + "); criu leaves it alive" + (agent().gone() ? "" : " and the CUDA agent tries again once criu is gone")
                    + ": if it stays so, run " + TaskReturn.byHand(t.pid, t.initial, last));
        }
        return left;
    }

    /** One task back: through the agent while it lives (one attempt), else through criu's own backend. */
    private TaskReturn.Outcome returnOne(CudaTask t) {
        TaskReturn.Listener quiet = new TaskReturn.Listener() { };
        java.util.function.BooleanSupplier alive = () -> t.startTime == 0 ? ProcStat.alive(t.pid) : ProcStat.alive(t.pid, t.startTime);
        if (!agent().gone()) {
            TaskReturn.Outcome o = TaskReturn.run(backend(), t.pid, t.initial, alive, 0, 0, quiet);
            if (o.back() || !agent().gone()) return o;
            t.uncertain = true;
        }
        CudaBackend own;
        try {
            own = fallback();
        } catch (IllegalStateException e) {
            return new TaskReturn.Outcome(TaskReturn.End.GAVE_UP, List.of(), null, e.getMessage());
        }
        long settle = t.uncertain ? lockTimeoutMs + 2000L : 0;
        TaskReturn.Outcome o = TaskReturn.run(own, t.pid, t.initial, alive, fallbackGiveUpMs, settle, new TaskReturn.Listener() {
            @Override
            public void back(CudaState first, List<String> steps, long ms) {
                log.info("pid {}: {} -> {}{} through {} in criu (the CUDA agent died){}", t.pid, first.word(), t.initial.word(),
                        steps.isEmpty() ? " (nothing to do)" : " via " + steps, own.describe(),
                        settle > 0 ? "; watching it for " + settle + " ms in case a call the agent started lands" : "");
            }

            @Override
            public void movedAgain(List<String> steps) {
                log.info("pid {}: moved again by a call the CUDA agent had started; back via {}", t.pid, steps);
            }
        });
        return o;
    }

    /** criu's own backend, opened the first time the agent turns out dead (as CRIU_CUDA_GUARD=0 opens it). */
    private synchronized CudaBackend fallback() {
        if (fallback == null) {
            BackendSelection s = deps.fallback().get();
            fallback = s.chosen().orElseThrow(() -> new IllegalStateException("the CUDA agent died and criu cannot open a "
                    + "CUDA backend of its own: " + s.reason()));
            log.info("the CUDA agent died: returning its tasks through {} in criu", fallback.describe());
        }
        return fallback;
    }
}

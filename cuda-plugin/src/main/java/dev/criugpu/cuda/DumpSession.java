package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.cuda.agent.AgentLink;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.hostcopy.HostCopyImages;
import dev.criugpu.cuda.image.CudaTaskImages;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.cuda.inherited.InheritedDevices;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.job.CudaIpcImports;
import dev.criugpu.cuda.job.MultiGpuMemory;
import dev.criugpu.cuda.job.NcclTransports;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.Transitions;
import dev.criugpu.cuda.sys.RestoreThreadControl;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One {@code criu dump}, hook by hook. The first PAUSE_DEVICES (criu calls it for the tree's root before it seizes
 * anything) finds every CUDA task of the running tree ({@link JobTasks}), refuses a job the driver could not put back
 * ({@link NcclTransports}) and locks the tasks together ({@link JobLock}); a task's own PAUSE_DEVICES then returns at
 * once. CHECKPOINT_DEVICES starts each checkpoint and the last one joins them all ({@link CheckpointRound}); criu's
 * exit returns what it touched ({@link DumpReturn}).
 */
final class DumpSession {
    private static final Logger log = LoggerFactory.getLogger(DumpSession.class);
    static final String AGENT_LOG = "cuda-plugin-agent.log";

    private final CriuServices services;
    private final CudaDeps deps;
    private final int lockTimeoutMs;
    /** Lock the job's CUDA tasks together at the first PAUSE_DEVICES (CRIU_CUDA_QUIESCE, default on). */
    private final boolean lockJob;
    /** Refuse a job on NCCL transports the driver cannot return (CRIU_CUDA_NCCL_CHECK, default on). */
    private final boolean ncclCheck;
    /** Refuse a process on several GPUs too large for a restore with peer access (CRIU_CUDA_MULTI_GPU_CHECK, default on). */
    private final boolean multiGpuCheck;
    private final WokenWork work;
    private final JobTasks tasks;
    private final CheckpointRound checkpoints;
    private final DumpReturn ending;
    private boolean started;
    private boolean inventoryAdded;
    private boolean keepHostCopies;
    private Optional<String> unavailable;

    /** Call {@link #removeStaleFiles} before the agent is started: it creates its log anew. */
    DumpSession(CriuServices services, CudaDeps deps, int lockTimeoutMs, List<GpuInfo> presentGpus, boolean parallel) {
        this(services, deps, lockTimeoutMs, presentGpus, parallel, false, true);
    }

    DumpSession(CriuServices services, CudaDeps deps, int lockTimeoutMs, List<GpuInfo> presentGpus, boolean parallel,
                boolean lockJob) {
        this(services, deps, lockTimeoutMs, presentGpus, parallel, lockJob, true);
    }

    DumpSession(CriuServices services, CudaDeps deps, int lockTimeoutMs, List<GpuInfo> presentGpus, boolean parallel,
                boolean lockJob, boolean ncclCheck) {
        this(services, deps, lockTimeoutMs, presentGpus, parallel, lockJob, ncclCheck, true);
    }

    DumpSession(CriuServices services, CudaDeps deps, int lockTimeoutMs, List<GpuInfo> presentGpus, boolean parallel,
                boolean lockJob, boolean ncclCheck, boolean multiGpuCheck) {
        this.services = services;
        this.multiGpuCheck = multiGpuCheck;
        this.deps = deps;
        this.lockTimeoutMs = lockTimeoutMs;
        this.lockJob = lockJob;
        this.ncclCheck = ncclCheck;
        this.work = new WokenWork(deps.threads(), parallel,
                services.faultInjected("no-restop-grace") ? 0 : WokenWork.STOP_GRACE_MS, new AgentMasks(deps.agent()));
        this.tasks = new JobTasks(deps, presentGpus, work, this::recordsState);
        this.checkpoints = new CheckpointRound(services, deps.backend(), work, tasks);
        this.ending = new DumpReturn(deps, work, lockTimeoutMs);
    }

    static Path agentLog(Path imageDir) {
        return imageDir.resolve(AGENT_LOG);
    }

    /** The log of the second agent, started at criu's exit when the first died. */
    static Path secondAgentLog(Path imageDir) {
        return imageDir.resolve("cuda-plugin-agent-2.log");
    }

    /** Tests shorten how long criu's exit keeps trying through its own backend after the agent died. */
    void fallbackGiveUpMs(long ms) {
        ending.fallbackGiveUpMs = ms;
    }

    /** Records and the agents' logs of an earlier dump into the same directory must not be taken for this one's. */
    static void removeStaleFiles(CriuServices services) {
        services.imageDir().ifPresent(dir -> {
            List<Path> stale = new ArrayList<>(CudaTaskImages.files(dir));
            stale.addAll(HostCopyImages.files(dir));
            stale.add(agentLog(dir));
            stale.add(secondAgentLog(dir));
            stale.add(dir.resolve(InheritedDevices.IMAGE));
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
            unavailable = deps.backend().unavailable();
            unavailable.ifPresent(why -> log.info("disabled: {}", why));
            if (unavailable.isEmpty()) log.info("using {}", deps.backend().describe());
        }
        return unavailable.isEmpty();
    }

    int pause(int pid) {
        tasks.paused(pid);
        CudaTask known = tasks.get(pid);
        if (known != null) {
            if (!known.lockDecided) lock(List.of(known));
            return 0;
        }
        if (tasks.knownWithoutCuda(pid) || !available()) return Errno.NOT_SUPPORTED;
        if (!started) {
            started = true;
            return start(pid);
        }
        Optional<CudaTask> appeared = tasks.find(pid);
        if (appeared.isEmpty()) return Errno.NOT_SUPPORTED;
        lock(List.of(appeared.get()));
        return 0;
    }

    /**
     * The first PAUSE_DEVICES: every CUDA task of the running tree is found now, before anything is changed, so that a
     * job the driver could not return is refused with every task running, and ranks that wait on each other's GPU
     * work are locked together.
     */
    private int start(int root) {
        List<CudaTask> found = tasks.findTree(root);
        if (ncclCheck && found.size() > 1) refuseUnreturnable(found);
        if (multiGpuCheck) refuseLargeMultiGpu(found);
        refuseImporters(found);
        if (lockJob) {
            lock(found);
        } else {
            tasks.find(root).ifPresent(t -> lock(List.of(t)));
        }
        return tasks.get(root) != null ? 0 : Errno.NOT_SUPPORTED;
    }

    private static void refuseUnreturnable(List<CudaTask> found) {
        List<NcclTransports.Rank> ranks = found.stream().map(t -> NcclTransports.Rank.read(Path.of("/proc"), t.pid)).toList();
        List<NcclTransports.Blocker> blockers = NcclTransports.blockers(ranks);
        if (blockers.isEmpty()) return;
        blockers.stream().skip(1).forEach(b -> log.error("{}", b.line()));
        throw new CriuException(Errno.EINVAL, blockers.getFirst().line() + "; nothing was locked, every task runs on"
                + (blockers.size() > 1 ? " (and " + (blockers.size() - 1) + " more, see above)" : "")
                + ". CRIU_CUDA_NCCL_CHECK=0 skips this check where the program disables these transports itself");
    }

    private static void refuseLargeMultiGpu(List<CudaTask> found) {
        List<String> lines = MultiGpuMemory.blockers(found.stream().map(t -> new MultiGpuMemory.Task(t.pid,
                t.gpus.stream().map(GpuInfo::uuid).toList())).toList(), GpuMemory::usedByPid);
        if (lines.isEmpty()) return;
        lines.stream().skip(1).forEach(l -> log.error("{}", l));
        throw new CriuException(Errno.EINVAL, lines.getFirst() + "; nothing was locked, every task runs on"
                + (lines.size() > 1 ? " (and " + (lines.size() - 1) + " more, see above)" : "") + ". "
                + MultiGpuMemory.SWITCH + " dumps it anyway where the process never enables peer access");
    }

    private static void refuseImporters(List<CudaTask> found) {
        List<Integer> pids = found.stream().map(t -> t.pid).toList();
        Path proc = Path.of("/proc");
        List<String> lines = CudaIpcImports.blockers(CudaIpcImports.of(proc, pids), CudaIpcImports.inTree(proc, pids));
        if (lines.isEmpty()) return;
        lines.stream().skip(1).forEach(l -> log.error("{}", l));
        throw new CriuException(Errno.EINVAL, lines.getFirst() + "; nothing was locked, every task runs on"
                + (lines.size() > 1 ? " (and " + (lines.size() - 1) + " more, see above)" : ""));
    }

    /** One locker for one task or many; a task it may have left locked stays touched, so criu's exit retries it. */
    private void lock(List<CudaTask> job) {
        job.forEach(t -> t.lockDecided = true);
        List<JobLock.Member> members = job.stream().map(t -> new JobLock.Member(t.pid, t.initial)).toList();
        job.stream().filter(t -> !Transitions.needsLock(t.initial)).forEach(t ->
                log.info("pid {} was already {} before the dump; it is left so afterwards", t.pid, t.initial.word()));
        try {
            JobLock.Locked locked = new JobLock(deps.backend()).lockAll(members, lockTimeoutMs);
            for (int pid : locked.pids()) tasks.get(pid).current = CudaState.LOCKED;
            if (locked.pids().size() == 1) {
                CudaTask t = tasks.get(locked.pids().getFirst());
                log.info("pid {}: CUDA locked in {} ms (GPUs {})", t.pid, locked.millis(),
                        t.gpus.stream().map(g -> g.uuid().text()).toList());
            }
        } catch (JobLock.NotLocked e) {
            for (int pid : e.stuck()) tasks.get(pid).uncertain = true;
            throw e;
        } catch (CriuException e) {
            // criu was told to stop: the locks go on; with the agent gone only the driver knows where they end
            if (deps.agent().gone()) job.forEach(t -> t.uncertain = true);
            throw e;
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

    int checkpoint(int pid) {
        CudaTask task = tasks.get(pid);
        if (task == null) return notPaused(pid);
        checkpoints.start(task);
        return 0;
    }

    private int notPaused(int pid) {
        if (tasks.knownWithoutCuda(pid) || !available() || !tasks.holdsCuda(pid)) return Errno.NOT_SUPPORTED;
        throw new CriuException(Errno.EIO, "pid " + pid + " holds CUDA state but was frozen without being locked first "
                + "(a criu without set_compel_interrupt_only_mode used with --freeze-cgroup?)");
    }

    /**
     * criu's plugin exit for the dump: {@code ret} 0 = success; {@code treeSurvives} from criu's options. True when a
     * task criu leaves alive could not be returned although the dump succeeded: criu must not exit 0.
     */
    boolean exit(int ret, boolean treeSurvives) {
        if (checkpoints.underWay()) checkpoints.finishQuietly();
        boolean stranded = ending.run(tasks.all(), tasks.watched(), ret, treeSurvives);
        if (ret == 0 && keepHostCopies) moveHostCopies();
        return stranded;
    }

    /** Whether a dump that succeeded keeps the tasks' host copies in the plugin's format (CRIU_CUDA_HOST_COPY). */
    void keepHostCopies(boolean on) {
        keepHostCopies = on;
    }

    /** Each task's host copy out of criu's pages ({@link HostCopyImages}); where that cannot be, criu's format stays. */
    private void moveHostCopies() {
        Optional<Path> dir = services.imageDir();
        if (dir.isEmpty()) return;
        for (CudaTask t : tasks.all()) {
            if (t.hostCopy.isEmpty()) continue;
            long t0 = System.nanoTime();
            try {
                long moved = HostCopyImages.move(dir.get(), t.nsPid, t.hostCopy);
                if (moved > 0) {
                    log.info("pid {}: {} MiB of host copy kept for the plugin to put back at restore ({} ms)", t.pid,
                            moved >> 20, (System.nanoTime() - t0) / 1_000_000);
                }
            } catch (ImageException e) {
                log.warn("pid {}: its host copy stays in criu's pages: {}", t.pid, e.getMessage());
            }
        }
    }

    /**
     * The agent hears of every restore thread that runs with our signals blocked, and of its mask given back: if criu
     * dies or ends in between, the agent gives the mask back once criu is gone.
     */
    private record AgentMasks(AgentLink agent) implements WokenWork.Masks {
        @Override
        public void blocked(RestoreThreadControl.Woken w) {
            try {
                agent.blocked(w.pid(), w.tid(), w.savedMask());
            } catch (IOException e) {
                log.debug("pid {}: could not tell the CUDA agent of restore thread {}: {}", w.pid(), w.tid(), e.getMessage());
            }
        }

        @Override
        public void givenBack(RestoreThreadControl.Woken w) {
            try {
                agent.unblocked(w.pid(), w.tid());
            } catch (IOException e) {
                log.debug("pid {}: could not tell the CUDA agent of restore thread {}: {}", w.pid(), w.tid(), e.getMessage());
            }
        }
    }
}

package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuExit;
import dev.criugpu.api.CriuPlugin;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.DeviceFile;
import dev.criugpu.api.Diagnosis;
import dev.criugpu.api.Errno;
import dev.criugpu.api.Hook;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.api.sys.Syscalls;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.DriverBackend;
import dev.criugpu.cuda.config.CriuCommandLine;
import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.gpu.NvidiaGpus;
import dev.criugpu.cuda.agent.AgentClient;
import dev.criugpu.cuda.inherited.InheritedDevices;
import dev.criugpu.cuda.inherited.InheritedPlan;
import dev.criugpu.cuda.sys.RestoreThreads;
import dev.criugpu.inventory.ImageException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * NVIDIA CUDA plugin: locks and checkpoints CUDA tasks on dump, restores and unlocks them on restore, through the
 * driver API (FFM) or NVIDIA's cuda-checkpoint. See {@link DumpSession} and {@link RestoreSession} for the flow.
 */
public final class CudaPlugin implements CriuPlugin {
    public static final String NAME = "cuda_plugin";
    private static final Logger log = LoggerFactory.getLogger(CudaPlugin.class);

    private DumpSession dump;
    private RestoreSession restore;
    private InheritedDevices inherited;
    private ChildPlan childPlan;
    private CriuCommandLine commandLine;
    /** The dump's CUDA agent, started by {@link #prepare}; init hands it to the dump, or gives it up. */
    private AgentStart agentStart;
    /** A restore's backend, free-memory question and images, started by {@link #prepare}. */
    private RestoreProbes restoreProbes;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<Hook> hooks() {
        return EnumSet.of(Hook.RESUME_DEVICES_LATE, Hook.PAUSE_DEVICES, Hook.CHECKPOINT_DEVICES,
                Hook.HANDLE_DEVICE_VMA, Hook.DUMP_EXT_FILE, Hook.RESTORE_EXT_FILE, Hook.UPDATE_VMA_MAP);
    }

    static Path cfgFile(Path pluginDir) {
        return pluginDir == null ? null : pluginDir.resolve("java/criu-gpu.cfg");
    }

    /**
     * What init would otherwise wait for starts here, before criu's JVM links its calls into criu, and runs while the
     * JVM finishes its start (issue 23): a dump's CUDA agent (its JVM and the driver library), a restore's backend and
     * free-memory questions.
     */
    @Override
    public void prepare(Stage stage, Path pluginDir, java.util.Optional<Path> imagesDir) {
        PluginConfig config = PluginConfig.load(System.getenv(), cfgFile(pluginDir));
        if (stage == Stage.DUMP && config.guard()) {
            agentStart = AgentStart.launch(config, pluginDir, CriuCommandLine.ofSelfOrDefault().lockBudgetMs());
        } else if (stage == Stage.RESTORE) {
            restoreProbes = RestoreProbes.start(config, imagesDir);
        }
    }

    /** A dump's init removes stale files through criu's images-dir fd, and its hooks write the images that way. */
    @Override
    public void warmUp(Stage stage) {
        if (stage == Stage.DUMP) Syscalls.libc().linkDirectoryCalls();
    }

    /** The CUDA agent: every guarded dump starts one, so the shim may start it before criu's JVM (issue 23). */
    @Override
    public java.util.Optional<List<String>> earlyHelper(Path pluginDir) {
        return java.util.Optional.of(AgentStart.earlyCommand(pluginDir));
    }

    @Override
    public int init(Stage stage, CriuServices services) {
        try {
            return initOrThrow(stage, services);
        } finally {
            // an agent the dump did not take (init failed) is given up; the restore's questions end inside init
            if (agentStart != null && dump == null) agentStart.giveUp();
            if (restoreProbes != null) restoreProbes.settle();
        }
    }

    private int initOrThrow(Stage stage, CriuServices services) {
        if (stage == Stage.PRE_DUMP) {
            log.info("disabled for pre-dump: GPU memory is dumped only by a full dump");
            return 0;
        }
        PluginConfig config;
        try {
            config = PluginConfig.load(System.getenv(), cfgFile(services.pluginDir()));
            config.backend();
        } catch (IllegalArgumentException e) {
            throw new CriuException(Errno.EINVAL, e.getMessage());
        }
        if (stage == Stage.RESTORE && services.inventoryClaim() == InventoryClaim.NOT_LISTED) {
            log.debug("the image holds no CUDA state");
            return 0;
        }
        if (stage == Stage.DUMP && config.guard()) return initDumpThroughAgent(services, config);
        BackendSelection selection = stage == Stage.RESTORE && restoreProbes != null ? restoreProbes.backend()
                : BackendSelection.choose(config.backend(), DriverBackend::probe, System.getenv("PATH"));
        if (selection.chosen().isEmpty()) {
            if (stage == Stage.RESTORE && services.inventoryClaim() == InventoryClaim.LISTED) {
                throw new CriuException(Errno.ENODEV, "the image holds CUDA state but it cannot be restored here: " + selection.reason());
            }
            log.info("disabled: {}", selection.reason());
            return 0;
        }
        CudaBackend backend = selection.backend();
        log.info("{} ({} work per task)", selection.reason(), config.parallel() ? "parallel" : "sequential");
        return stage == Stage.DUMP ? initDumpInCriu(services, config, backend) : initRestore(services, config, backend);
    }

    /** The CUDA agent chooses and opens the backend, and makes every driver call of the dump. */
    private int initDumpThroughAgent(CriuServices services, PluginConfig config) {
        return startDump(services, config, lockTimeoutMs -> agentDeps(services, config, lockTimeoutMs));
    }

    /** {@code CRIU_CUDA_GUARD=0}: the dump's driver calls run in criu's JVM through {@code backend}. */
    private int initDumpInCriu(CriuServices services, PluginConfig config, CudaBackend backend) {
        return startDump(services, config, lockTimeoutMs -> inCriuDeps(backend));
    }

    private int startDump(CriuServices services, PluginConfig config, java.util.function.IntFunction<CudaDeps> calls) {
        commandLine = commandLine();
        if (!services.setCompelInterruptOnlyMode()) {
            log.warn("this criu has no set_compel_interrupt_only_mode: with --freeze-cgroup CUDA tasks cannot be woken");
        }
        int timeoutMs = commandLine.lockBudgetMs(); // half of criu's --timeout: criu's seize needs the rest
        DumpSession.removeStaleFiles(services);
        inherited = services.imageDir().map(InheritedDevices::new).orElse(null);
        dump = new DumpSession(services, calls.apply(timeoutMs), timeoutMs, presentGpus(Set.of()), config.parallel(), config.quiesce(),
                config.ncclCheck());
        GpuMemory.warmUp();
        return 0;
    }

    /**
     * The dump's driver calls go to the CUDA agent, a process beside criu started now (it comes up while criu seizes
     * the tree), which also answers for the tasks if criu goes away; it keeps watching a returned task for longer than
     * a lock criu started could still take.
     */
    private CudaDeps agentDeps(CriuServices services, PluginConfig config, int lockTimeoutMs) {
        Path dir = services.imageDir().orElseThrow(() -> new CriuException(Errno.EINVAL, "criu gave no images directory"));
        AgentStart start = agentStart != null ? agentStart : AgentStart.launch(config, services.pluginDir(), lockTimeoutMs);
        start.aotProblem().ifPresent(why -> log.warn("the CUDA agent starts without its AOT cache: {}", why));
        AgentClient agent = start.client().logTo(DumpSession.agentLog(dir));
        log.info("starting the CUDA agent (backend {}, {} work per task)", start.backend(), config.parallel() ? "parallel" : "sequential");
        // the backend criu's JVM opens only if the agent dies while tasks must go back: the one CRIU_CUDA_GUARD=0 uses
        return new CudaDeps(agent, RestoreThreads.PTRACE, agent,
                () -> BackendSelection.choose(config.backend(), DriverBackend::probe, System.getenv("PATH")),
                () -> start.again().logTo(DumpSession.secondAgentLog(dir)));
    }

    /** Without the agent ({@code CRIU_CUDA_GUARD=0}) the calls run in criu and nothing watches the tasks. */
    private static CudaDeps inCriuDeps(CudaBackend backend) {
        log.info("no CUDA agent (CRIU_CUDA_GUARD=0): driver calls run inside criu, and if criu dies during the dump "
                + "its CUDA tasks stay as they are (return them with `criu-gpu cuda --toggle --pid PID`)");
        return CudaDeps.inCriu(backend, RestoreThreads.PTRACE);
    }

    private static CriuCommandLine commandLine() {
        try {
            CriuCommandLine c = CriuCommandLine.ofSelf();
            if (c.rpc()) {
                log.info("criu runs as an RPC worker: its --timeout/-R are unknown here; lock timeout {} s, and the "
                        + "CUDA agent returns the tasks if criu leaves them alive", CriuCommandLine.DEFAULT_TIMEOUT_SECONDS);
            }
            return c;
        } catch (IllegalArgumentException e) {
            log.warn("{}; using criu's default of {} s", e.getMessage(), CriuCommandLine.DEFAULT_TIMEOUT_SECONDS);
            return CriuCommandLine.UNKNOWN;
        }
    }

    private int initRestore(CriuServices services, PluginConfig config, CudaBackend backend) {
        Path dir = services.imageDir().orElseThrow(() -> new CriuException(Errno.EINVAL, "criu gave no images directory"));
        try {
            RestoreImages images = restoreProbes != null ? restoreProbes.images(dir) : null;
            if (images == null) images = RestoreImages.read(dir);
            images.inherited().filter(entry -> !services.restoreCheckOnly()).ifPresent(entry -> {
                childPlan = new ChildPlan("cuda");
                InheritedPlan.addTo(childPlan, entry);
                if (!services.setChildExecutor(childPlan)) {
                    throw new CriuException(Errno.ENOTSUP, dir.resolve(InheritedDevices.IMAGE) + ": the restored tasks "
                            + "hold NVIDIA device files inherited without CUDA state, and this shim cannot run their "
                            + "stand-ins in criu's children (mismatched build)");
                }
                log.info("{} inherited /dev/nvidia* file(s){} get stand-ins", entry.getFilesCount(),
                        entry.getMappings() ? " and mappings" : "");
            });
            var records = images.records();
            // LISTED or LEGACY (NOT_LISTED disabled the plugin before): tasks without a record of ours may hold CUDA
            // state all the same, as every task of an image dumped by upstream's plugin does
            restore = new RestoreSession(CudaDeps.inCriu(backend, RestoreThreads.PTRACE), records,
                    resumedTasks(images, services.inventoryClaim()), services.inventoryClaim() != InventoryClaim.NOT_LISTED,
                    presentGpus(config.treatAbsent()), presentGpus(Set.of()), config.deviceMap(), config.parallel(),
                    restoreProbes != null ? restoreProbes::freeMib : GpuMemory::freeMib);
            log.info("{} CUDA task record(s) in {}", records.size(), dir);
            // refused here, before criu creates any task, rather than in RESUME_DEVICES_LATE, where a failure costs
            // the restored tree: the images stay as they are and a restore with another map can follow
            restore.blockingError().ifPresent(why -> {
                restore = null;
                throw new CriuException(Errno.ENODEV, "CUDA restore refused, nothing was restored: " + why);
            });
            // before criu forks the first task (the probe runs here, in a copy of criu, before that fork)
            ListenPorts.free(dir);
            if (services.restoreCheckOnly()) restore = null; // the probe's verdict is all it gives
            return 0;
        } catch (ImageException e) {
            throw new CriuException(Errno.EIO, e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new CriuException(Errno.EINVAL, e.getMessage());
        }
    }

    /**
     * The tasks criu will resume, in its order. Without pstree.img the tasks that have no record of ours are unknown:
     * an image that lists this plugin may hold CUDA state in exactly those (upstream's plugin writes no records), so
     * the restore is refused; an image from before the plugins field only warns (null: only recorded tasks).
     */
    static Set<Integer> resumedTasks(RestoreImages images, InventoryClaim claim) {
        ImageException e = images.resumedError();
        if (e == null) return images.resumed();
        if (claim == InventoryClaim.LISTED) {
            throw new CriuException(Errno.EIO, e.getMessage() + "; the image holds CUDA state (inventory.img lists "
                    + NAME + "), and without its task list the tasks with no cuda-plugin-<pid>.img cannot be "
                    + "restored: nothing was restored");
        }
        log.warn("{}; tasks without a cuda-plugin-<pid>.img are not restored", e.getMessage());
        return null;
    }

    private static List<GpuInfo> presentGpus(Set<GpuUuid> treatAbsent) {
        try {
            List<GpuInfo> all = NvidiaGpus.list(NvidiaGpus.PROC_ROOT);
            if (!treatAbsent.isEmpty()) log.info("treating {} as absent (CRIU_CUDA_TREAT_ABSENT)", treatAbsent);
            return all.stream().filter(g -> !treatAbsent.contains(g.uuid())).toList();
        } catch (IOException | IllegalArgumentException e) {
            log.warn("cannot list GPUs from {}: {}", NvidiaGpus.PROC_ROOT, e.getMessage());
            return List.of();
        }
    }

    @Override
    public void exit(Stage stage, int ret) {
        if (inherited != null) inherited.finish(ret == 0);
        boolean stranded = dump != null && dump.exit(ret, commandLine.treeSurvivesDump());
        if (restore != null) restore.exit();
        if (childPlan != null) childPlan.close();
        dump = null;
        restore = null;
        inherited = null;
        childPlan = null;
        if (stranded) {
            // criu still leaves the tree stopped (-s) or resumes it, and cleans up, before it ends with that status
            if (CriuExit.afterCleanup(NAME, 1)) {
                log.error("criu will exit with status 1, not 0, after its cleanup: the dump is written but a CUDA task "
                        + "it leaves alive is not as it was (see above)");
            } else {
                log.error("the dump is written but a CUDA task it leaves alive is not as it was (see above), and this "
                        + "shim cannot make criu exit with status 1 (mismatched build): criu's status does not say so");
            }
        }
    }

    @Override
    public int handleDeviceVma(int fd, DeviceFile stat) {
        return inherited == null ? Errno.NOT_SUPPORTED : claimed(inherited.handleDeviceVma(fd, stat));
    }

    @Override
    public int dumpExtFile(int fd, int id) {
        return inherited == null ? Errno.NOT_SUPPORTED : claimed(inherited.dumpExtFile(fd, id));
    }

    /** What the dump recorded of inherited files needs this plugin at restore: the inventory says so. */
    private int claimed(int rc) {
        if (rc == 0 && dump != null) dump.recordsState();
        return rc;
    }

    @Override
    public int pauseDevices(int pid) {
        if (dump == null) return Errno.NOT_SUPPORTED;
        int rc = dump.pause(pid);
        if (inherited != null) inherited.paused(pid, rc == 0);
        return rc;
    }

    @Override
    public int checkpointDevices(int pid) {
        if (dump == null) return Errno.NOT_SUPPORTED;
        if (inherited != null) inherited.beforeCheckpoint(pid);
        return dump.checkpoint(pid);
    }

    @Override
    public int resumeDevicesLate(int pid) {
        return restore == null ? Errno.NOT_SUPPORTED : restore.resume(pid);
    }

    @Override
    public Diagnosis diagnose() {
        // criu-gpu doctor runs outside criu: bin/criu-gpu names the plugin dir it was started from.
        String dir = System.getProperty("criu.gpu.dir");
        return CudaDiagnosis.run(System.getenv(), cfgFile(dir == null ? null : Path.of(dir)));
    }
}

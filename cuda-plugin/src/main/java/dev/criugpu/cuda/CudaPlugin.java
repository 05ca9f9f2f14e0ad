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
import dev.criugpu.cuda.config.CriuCommandLine;
import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.gpu.NvidiaGpus;
import dev.criugpu.cuda.agent.AgentClient;
import dev.criugpu.cuda.agent.AgentWarmUp;
import dev.criugpu.cuda.inherited.InheritedDevices;
import dev.criugpu.cuda.inherited.InheritedPlan;
import dev.criugpu.cuda.sys.DriverBackend;
import dev.criugpu.cuda.sys.RestoreThreads;
import dev.criugpu.inventory.ImageException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * NVIDIA CUDA plugin: locks and checkpoints CUDA tasks on dump, restores and unlocks them on restore, through the
 * driver API (FFM) or NVIDIA's cuda-checkpoint. See {@link DumpSession} and {@link RestoreSession} for the flow.
 */
public final class CudaPlugin implements CriuPlugin {
    public static final String NAME = "cuda_plugin";
    private static final Logger log = LoggerFactory.getLogger(CudaPlugin.class);

    /** Everything held between hooks ({@link CudaPhase}). */
    private CudaPhase phase = CudaPhase.IDLE;

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
        // NVML's first start takes tens of milliseconds: begun here, it is over before the first checkpoint needs
        // the tasks' GPU memory, so a locked job does not wait for it (BENCHMARKS, session 14)
        if (stage == Stage.DUMP) GpuMemory.warmUp();
        if (stage == Stage.DUMP && config.guard()) {
            phase = new CudaPhase.Prepared(Optional.of(AgentStart.launch(config, pluginDir,
                    CriuCommandLine.ofSelf().lockBudgetMs())), Optional.empty());
        } else if (stage == Stage.RESTORE) {
            phase = new CudaPhase.Prepared(Optional.empty(), Optional.of(RestoreProbes.start(config, imagesDir)));
        }
    }

    /**
     * A dump's init removes stale files through criu's images-dir fd, and its hooks write the images that way; its first
     * PAUSE_DEVICES makes the first calls through the agent protocol.
     */
    @Override
    public void warmUp(Stage stage) {
        if (stage != Stage.DUMP) return;
        Syscalls.libc().linkDirectoryCalls();
        AgentWarmUp.run();
    }

    /** The CUDA agent: every dump with CRIU_CUDA_GUARD on (the default) starts one, so the shim may start it before criu's JVM (issue 23). */
    @Override
    public java.util.Optional<List<String>> earlyHelper(Path pluginDir) {
        return java.util.Optional.of(AgentStart.earlyCommand(pluginDir));
    }

    @Override
    public int init(Stage stage, CriuServices services) {
        CudaPhase.Prepared prepared = takePrepared();
        try {
            phase = initOrThrow(stage, services, prepared);
            return 0;
        } finally {
            // an agent the dump did not take (init failed) is given up; the restore's questions end inside init
            if (!(phase instanceof CudaPhase.Dumping)) prepared.agent().ifPresent(AgentStart::giveUp);
            prepared.probes().ifPresent(RestoreProbes::settle);
        }
    }

    /** The restore probe's part: refuses a restore that cannot succeed here, frees the job's listen ports once. */
    @Override
    public int checkRestore(CriuServices services) {
        CudaPhase.Prepared prepared = takePrepared();
        try {
            PluginConfig config = config(services);
            restoreBackend(services, config, prepared).ifPresent(backend ->
                    RestoreStart.check(services, config, backend, prepared.probes()));
            return 0;
        } finally {
            prepared.agent().ifPresent(AgentStart::giveUp);
            prepared.probes().ifPresent(RestoreProbes::settle);
        }
    }

    private CudaPhase.Prepared takePrepared() {
        CudaPhase.Prepared prepared = phase instanceof CudaPhase.Prepared p ? p
                : new CudaPhase.Prepared(Optional.empty(), Optional.empty());
        phase = CudaPhase.IDLE;
        return prepared;
    }

    private CudaPhase initOrThrow(Stage stage, CriuServices services, CudaPhase.Prepared prepared) {
        if (stage == Stage.PRE_DUMP) {
            log.info("disabled for pre-dump: GPU memory is dumped only by a full dump");
            return CudaPhase.IDLE;
        }
        PluginConfig config = config(services);
        if (stage == Stage.RESTORE) {
            return restoreBackend(services, config, prepared)
                    .<CudaPhase>map(backend -> RestoreStart.start(services, config, backend, prepared.probes()))
                    .orElse(CudaPhase.IDLE);
        }
        if (config.guard()) return DumpStart.throughAgent(services, config, prepared.agent());
        BackendSelection selection = BackendSelection.choose(config.backend(), DriverBackend::probe, System.getenv("PATH"));
        if (selection.chosen().isEmpty()) {
            log.info("disabled: {}", selection.reason());
            return CudaPhase.IDLE;
        }
        log.info("{} ({} work per task)", selection.reason(), config.parallel() ? "parallel" : "sequential");
        return DumpStart.inCriu(services, config, selection.backend());
    }

    private static PluginConfig config(CriuServices services) {
        try {
            PluginConfig config = PluginConfig.load(System.getenv(), cfgFile(services.pluginDir()));
            config.backend();
            return config;
        } catch (IllegalArgumentException e) {
            throw new CriuException(Errno.EINVAL, e.getMessage());
        }
    }

    /** The backend a restore works with; empty where the image holds no CUDA state or none is needed and none works. */
    private static Optional<CudaBackend> restoreBackend(CriuServices services, PluginConfig config,
                                                        CudaPhase.Prepared prepared) {
        if (services.inventoryClaim() == InventoryClaim.NOT_LISTED) {
            log.debug("the image holds no CUDA state");
            return Optional.empty();
        }
        BackendSelection selection = prepared.probes().isPresent() ? prepared.probes().get().backend()
                : BackendSelection.choose(config.backend(), DriverBackend::probe, System.getenv("PATH"));
        if (selection.chosen().isEmpty()) {
            if (services.inventoryClaim() == InventoryClaim.LISTED) {
                throw new CriuException(Errno.ENODEV, "the image holds CUDA state but it cannot be restored here: " + selection.reason());
            }
            log.info("disabled: {}", selection.reason());
            return Optional.empty();
        }
        log.info("{} ({} work per task)", selection.reason(), config.parallel() ? "parallel" : "sequential");
        return Optional.of(selection.backend());
    }

    @Override
    public void exit(Stage stage, int ret) {
        CudaPhase ending = phase;
        phase = CudaPhase.IDLE;
        switch (ending) {
            case CudaPhase.Dumping d -> {
                d.inherited().ifPresent(i -> i.finish(ret == 0));
                try {
                    if (d.session().exit(ret, d.commandLine().treeSurvivesDump())) stranded();
                } finally {
                    d.release().close(); // a dump that ended before its first checkpoint: the ranks go on
                }
            }
            case CudaPhase.Restoring r -> {
                r.session().exit();
                r.childPlan().ifPresent(ChildPlan::close);
            }
            case CudaPhase.Prepared p -> p.agent().ifPresent(AgentStart::giveUp);
            case CudaPhase.Idle i -> { }
        }
    }

    /** A task criu leaves alive could not be returned although the dump succeeded: criu must not exit 0. */
    private static void stranded() {
        // criu still leaves the tree stopped (-s) or resumes it, and cleans up, before it ends with that status
        if (CriuExit.afterCleanup(NAME, 1)) {
            log.error("criu will exit with status 1, not 0, after its cleanup: the dump is written but a CUDA task "
                    + "it leaves alive is not as it was (see above)");
        } else {
            log.error("the dump is written but a CUDA task it leaves alive is not as it was (see above), and this "
                    + "shim cannot make criu exit with status 1 (mismatched build): criu's status does not say so");
        }
    }

    @Override
    public int handleDeviceVma(int fd, DeviceFile stat) {
        return phase instanceof CudaPhase.Dumping d && d.inherited().isPresent()
                ? claimed(d, d.inherited().get().handleDeviceVma(fd, stat)) : Errno.NOT_SUPPORTED;
    }

    @Override
    public int dumpExtFile(int fd, int id) {
        return phase instanceof CudaPhase.Dumping d && d.inherited().isPresent()
                ? claimed(d, d.inherited().get().dumpExtFile(fd, id)) : Errno.NOT_SUPPORTED;
    }

    /** What the dump recorded of inherited files needs this plugin at restore: the inventory says so. */
    private static int claimed(CudaPhase.Dumping d, int rc) {
        if (rc == 0) d.session().recordsState();
        return rc;
    }

    @Override
    public int pauseDevices(int pid) {
        if (!(phase instanceof CudaPhase.Dumping d)) return Errno.NOT_SUPPORTED;
        int rc = d.session().pause(pid);
        d.inherited().ifPresent(i -> i.paused(pid, rc == 0));
        return rc;
    }

    @Override
    public int checkpointDevices(int pid) {
        if (!(phase instanceof CudaPhase.Dumping d)) return Errno.NOT_SUPPORTED;
        // the tree is frozen now and its files not yet dumped: the ranks' channels go into the images without the request
        d.release().close();
        d.inherited().ifPresent(i -> i.beforeCheckpoint(pid));
        return d.session().checkpoint(pid);
    }

    @Override
    public int resumeDevicesLate(int pid) {
        return phase instanceof CudaPhase.Restoring r ? r.session().resume(pid) : Errno.NOT_SUPPORTED;
    }

    @Override
    public Diagnosis diagnose() {
        // criu-gpu doctor runs outside criu: bin/criu-gpu names the plugin dir it was started from.
        String dir = System.getProperty("criu.gpu.dir");
        return CudaDiagnosis.run(System.getenv(), cfgFile(dir == null ? null : Path.of(dir)));
    }
}

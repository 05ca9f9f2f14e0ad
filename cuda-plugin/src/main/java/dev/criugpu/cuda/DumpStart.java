package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Errno;
import dev.criugpu.cuda.agent.AgentClient;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.sys.DriverBackend;
import dev.criugpu.cuda.config.CriuCommandLine;
import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.NvidiaGpus;
import dev.criugpu.cuda.inherited.InheritedDevices;
import dev.criugpu.cuda.job.CommRelease;
import dev.criugpu.cuda.sys.RestoreThreads;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import java.util.function.IntFunction;

/** A dump's init: criu's options, the files of an earlier dump removed, the driver's seam chosen, the session made. */
final class DumpStart {
    private static final Logger log = LoggerFactory.getLogger(DumpStart.class);

    private DumpStart() {
    }

    /**
     * The dump's driver calls go to the CUDA agent, a process beside criu ({@code started} by prepare, else started
     * now), which also answers for the tasks if criu goes away.
     */
    static CudaPhase.Dumping throughAgent(CriuServices services, PluginConfig config, Optional<AgentStart> started) {
        return start(services, config, lockBudgetMs -> {
            Path dir = services.imageDir().orElseThrow(() -> new CriuException(Errno.EINVAL, "criu gave no images directory"));
            AgentStart agentStart = started.orElseGet(() -> AgentStart.launch(config, services.pluginDir(), lockBudgetMs));
            agentStart.aotProblem().ifPresent(why -> log.warn("the CUDA agent starts without its AOT cache: {}", why));
            AgentClient agent = agentStart.client().logTo(DumpSession.agentLog(dir));
            log.info("starting the CUDA agent (backend {}, {} work per task)", agentStart.backend(),
                    config.parallel() ? "parallel" : "sequential");
            // the backend criu's JVM opens only if the agent dies while tasks must go back: the one CRIU_CUDA_GUARD=0 uses
            return new CudaDeps(agent, RestoreThreads.PTRACE, agent,
                    () -> BackendSelection.choose(config.backend(), DriverBackend::probe, System.getenv("PATH")),
                    () -> agentStart.again().logTo(DumpSession.secondAgentLog(dir)));
        });
    }

    /** {@code CRIU_CUDA_GUARD=0}: the calls run in criu's JVM through {@code backend}, and nothing watches the tasks. */
    static CudaPhase.Dumping inCriu(CriuServices services, PluginConfig config, CudaBackend backend) {
        return start(services, config, lockBudgetMs -> {
            log.info("no CUDA agent (CRIU_CUDA_GUARD=0): driver calls run inside criu, and if criu dies during the dump "
                    + "its CUDA tasks stay as they are (return them with `criu-gpu cuda --toggle --pid PID`)");
            return CudaDeps.inCriu(backend, RestoreThreads.PTRACE);
        });
    }

    private static CudaPhase.Dumping start(CriuServices services, PluginConfig config, IntFunction<CudaDeps> calls) {
        CriuCommandLine commandLine = commandLine();
        if (!services.setCompelInterruptOnlyMode()) {
            log.warn("this criu has no set_compel_interrupt_only_mode: with --freeze-cgroup CUDA tasks cannot be woken");
        }
        int lockBudgetMs = commandLine.lockBudgetMs(); // half of criu's --timeout: criu's seize needs the rest
        DumpSession.removeStaleFiles(services);
        Optional<InheritedDevices> inherited = services.imageDir().map(InheritedDevices::new);
        DumpSession session = new DumpSession(services, calls.apply(lockBudgetMs), lockBudgetMs,
                NvidiaGpus.present(Set.of()), config.parallel(), config.quiesce(), config.ncclCheck(), config.multiGpuCheck());
        session.keepHostCopies(config.hostCopyPlugin());
        GpuMemory.warmUp();
        // last: nothing after it may fail and leave the ranks released without an exit to tell them to go on
        CommRelease release = commandLine.tree().isPresent()
                ? CommRelease.ask(Path.of("/proc"), commandLine.tree().getAsInt(), config.ncclReleaseMs()) : CommRelease.none();
        return new CudaPhase.Dumping(session, inherited, commandLine, release);
    }

    private static CriuCommandLine commandLine() {
        CriuCommandLine c = CriuCommandLine.ofSelf();
        if (c.rpc()) {
            log.info("criu runs as an RPC worker: its --timeout/-R are unknown here; lock timeout {} s, and the "
                    + "CUDA agent returns the tasks if criu leaves them alive", CriuCommandLine.DEFAULT_TIMEOUT_SECONDS);
        }
        c.doubt().ifPresent(why -> log.warn("{}: the tree is taken to outlive the dump, so its CUDA tasks are returned "
                + "before criu exits", why));
        return c;
    }
}

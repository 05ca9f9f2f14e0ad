package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.AmdgpuHost;
import dev.criugpu.amdgpu.dump.MaxBufferSize;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.sys.KfdFile;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Errno;
import dev.criugpu.api.RestoreFailure;
import dev.criugpu.api.sys.SyscallException;
import dev.criugpu.api.sys.Syscalls;
import dev.criugpu.api.sys.Tasks;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The restore side of one criu restore, in criu's main process. Before criu forks (init): the plan from the
 * images and the local topology (a GPU that cannot be matched refuses the restore here, with nothing forked),
 * hsakmt's files in /dev/shm where the images recorded them and they are gone ({@link HsakmtFiles}),
 * a refill channel per KFD image in criu's fdstore, the plan handed to the shim's executor, and the refill poller
 * and one refill worker per local GPU started, so that no thread of ours is created while criu forks tasks with
 * exact pids (DESIGN rule 3). RESUME_DEVICES_LATE(pid) waits for every refill, then resumes the task's queues; a
 * task whose GPU memory could not be refilled, or whose queues cannot be resumed, is killed instead
 * ({@link RestoreFailure}: criu ignores this hook's result, and the task would otherwise run on wrong GPU memory;
 * the kill makes criu fail the restore).
 */
public final class AmdgpuRestoreSession implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(AmdgpuRestoreSession.class);

    private final Syscalls sys;
    private final RestorePlan plan;
    private final RefillChannels channels;
    private final RefillSession refill;

    private AmdgpuRestoreSession(Syscalls sys, RestorePlan plan, RefillChannels channels, RefillSession refill) {
        this.sys = sys;
        this.plan = plan;
        this.channels = channels;
        this.refill = refill;
    }

    /** Empty when the images hold no AMD file (then the plugin has nothing to do). */
    /**
     * The restore probe's check: the images' GPUs must match this host's and the plan must build; no channel, file or
     * thread of it is made (throws, naming why, where it cannot).
     */
    public static void check(AmdgpuHost host, Path imagesDir) {
        if (!holdsAmdgpuFiles(imagesDir)) return;
        Topology local = new SysfsTopologyReader(host.topologyRoot()).read("Local");
        RestorePlan.build(new AmdgpuImages(imagesDir), local, host.env(), log::error, fileId -> -1).close();
    }

    public static Optional<AmdgpuRestoreSession> open(AmdgpuHost host, CriuServices services, Path imagesDir) {
        if (!holdsAmdgpuFiles(imagesDir)) return Optional.empty();
        Topology local = new SysfsTopologyReader(host.topologyRoot()).read("Local");
        RefillChannels channels = new RefillChannels(host.fdstore().orElseThrow(() -> new CriuException(Errno.ENOTSUP,
                "this criu has no fdstore: criu 4.2 or newer is needed to restore AMD GPU state")));
        RestorePlan plan = null;
        RefillSession refill = null;
        try {
            plan = RestorePlan.build(new AmdgpuImages(imagesDir), local, host.env(), log::error, channels::fdstoreIdFor);
            HsakmtFiles.recreate(host.sys(), host.hsakmtShm(), plan.kfds().values());
            BoRefiller refiller = new BoRefiller(host.sys(), imagesDir, MaxBufferSize.fromEnvironment(host.env()),
                    plan.localGpus());
            refill = new RefillSession(plan, refiller, channels);
            if (!services.setChildExecutor(plan.childPlan())) {
                throw new CriuException(Errno.ENOTSUP, "the shim cannot run the AMD restore in criu's children"
                        + " (plugin and Java parts from different builds?)");
            }
            refill.start();
            log.info("restoring {} KFD file(s); GPU map {}", plan.kfds().size(), plan.mappings());
            return Optional.of(new AmdgpuRestoreSession(host.sys(), plan, channels, refill));
        } catch (RuntimeException e) {
            if (refill != null) refill.close();
            channels.close();
            if (plan != null) plan.close();
            throw e;
        }
    }

    private static boolean holdsAmdgpuFiles(Path dir) {
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "amdgpu-{kfd,renderD}-*.img")) {
            return ds.iterator().hasNext();
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, "cannot list images directory " + dir + ": " + e.getMessage(), e);
        }
    }

    public int resume(int pid) {
        RefillSession.Outcome outcome;
        try {
            outcome = refill.finish();
        } catch (CriuException e) {
            if (e.errno() != Errno.EINTR) throw e;
            // criu ends now and would leave the task to run on GPU memory that may not be all there
            log.error("{}", RestoreFailure.killTask(pid, "GPU memory not restored: " + e.getMessage()).getMessage());
            return -Errno.EINTR;
        }
        List<String> failures = outcome.failuresByTask().get(Tasks.innermostPid(pid));
        if (failures != null) {
            failures.forEach(log::error);
            log.error("{}", RestoreFailure.killTask(pid, "GPU memory not restored").getMessage());
            return -Errno.EIO;
        }
        int fd;
        try {
            fd = sys.open(KfdFile.DEVICE, Syscalls.O_RDWR | Syscalls.O_CLOEXEC);
        } catch (SyscallException e) {
            return Errno.NOT_SUPPORTED;
        }
        try {
            new KfdFile(sys, fd).resume(pid);
            log.debug("pid {}: GPU queues resumed", pid);
            return 0;
        } catch (SyscallException e) {
            if (e.errno() == Errno.ESRCH) return Errno.NOT_SUPPORTED; // no KFD process behind this pid
            throw RestoreFailure.killTask(pid, "GPU queues not resumed: " + e.getMessage());
        } finally {
            sys.close(fd);
        }
    }

    @Override
    public void close() {
        refill.close();
        channels.close();
        plan.close();
    }
}

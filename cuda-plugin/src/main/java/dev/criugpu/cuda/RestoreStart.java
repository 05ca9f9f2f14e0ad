package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Errno;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.config.CriuCommandLine;
import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.hostcopy.HostCopyFill;
import dev.criugpu.cuda.hostcopy.HostCopyImages;
import dev.criugpu.cuda.gpu.NvidiaGpus;
import dev.criugpu.cuda.inherited.InheritedDevices;
import dev.criugpu.cuda.inherited.InheritedPlan;
import dev.criugpu.cuda.sys.RestoreThreads;
import dev.criugpu.inventory.ImageException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;

/**
 * A restore's two steps: the probe's check (the images read, a restore that cannot succeed here refused before criu
 * creates any task, the job's listen ports freed) and criu's init after the fork (the same session, and the stand-ins
 * for inherited device files handed to criu's children).
 */
final class RestoreStart {
    private static final Logger log = LoggerFactory.getLogger(RestoreStart.class);

    private RestoreStart() {
    }

    /**
     * The restore probe's check: the images read, the session built, a restore that cannot succeed here refused before
     * criu creates any task (the images stay as they are, and a restore with another map can follow), the job's listen
     * ports freed once.
     */
    static void check(CriuServices services, PluginConfig config, CudaBackend backend, Optional<RestoreProbes> probes) {
        Path dir = imagesDir(services);
        opened(dir, services, config, backend, probes);
        ListenPorts.free(dir, CriuCommandLine.ofSelf());
    }

    /**
     * criu's restore init: the same refusal where no probe ran (criu older than 4.2: then the ports are freed here),
     * then the stand-ins for inherited device files handed to criu's children; the phase the restore's hooks work in.
     */
    static CudaPhase start(CriuServices services, PluginConfig config, CudaBackend backend, Optional<RestoreProbes> probes) {
        Path dir = imagesDir(services);
        Opened opened = opened(dir, services, config, backend, probes);
        if (!services.afterRestoreProbe()) ListenPorts.free(dir, CriuCommandLine.ofSelf());
        Optional<ChildPlan> childPlan = opened.images().inherited().map(entry -> {
            ChildPlan plan = new ChildPlan("cuda");
            InheritedPlan.addTo(plan, entry);
            if (!services.setChildExecutor(plan)) {
                throw new CriuException(Errno.ENOTSUP, dir.resolve(InheritedDevices.IMAGE) + ": the restored tasks "
                        + "hold NVIDIA device files inherited without CUDA state, and this shim cannot run their "
                        + "stand-ins in criu's children (mismatched build)");
            }
            log.info("{} inherited /dev/nvidia* file(s){} get stand-ins", entry.getFilesCount(),
                    entry.getMappings() ? " and mappings" : "");
            return plan;
        });
        return new CudaPhase.Restoring(opened.session(), childPlan);
    }

    private record Opened(RestoreImages images, RestoreSession session) {
    }

    private static Path imagesDir(CriuServices services) {
        return services.imageDir().orElseThrow(() -> new CriuException(Errno.EINVAL, "criu gave no images directory"));
    }

    /** The images read and the session built; throws, naming why, where this restore cannot succeed here. */
    private static Opened opened(Path dir, CriuServices services, PluginConfig config, CudaBackend backend,
                                 Optional<RestoreProbes> probes) {
        try {
            RestoreImages images = probes.isPresent() ? probes.get().images(dir) : null;
            if (images == null) images = RestoreImages.read(dir);
            var records = images.records();
            // LISTED or LEGACY (NOT_LISTED disabled the plugin before): tasks without a record of ours may hold CUDA
            // state all the same, as every task of an image dumped by upstream's plugin does
            RestoreSession session = new RestoreSession(CudaDeps.inCriu(backend, RestoreThreads.PTRACE), records,
                    resumedTasks(images, services.inventoryClaim()), services.inventoryClaim() != InventoryClaim.NOT_LISTED,
                    NvidiaGpus.present(config.treatAbsent()), NvidiaGpus.present(Set.of()), config.deviceMap(),
                    config.parallel(), probes.isPresent() ? probes.get()::freeMib : GpuMemory::freeMib);
            log.info("{} CUDA task record(s) in {}", records.size(), dir);
            hostCopies(dir, session);
            // refused here, before criu creates any task, rather than in RESUME_DEVICES_LATE, where a failure costs
            // the restored tree
            session.blockingError().ifPresent(why -> {
                throw new CriuException(Errno.ENODEV, "CUDA restore refused, nothing was restored: " + why);
            });
            return new Opened(images, session);
        } catch (ImageException e) {
            throw new CriuException(Errno.EIO, e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new CriuException(Errno.EINVAL, e.getMessage());
        }
    }

    /**
     * The host copies of a dump in the plugin's format: only where the inventory requires {@link HostCopyImages#MARKER}
     * (a dump that moved them wrote it; criu refuses the restore without a plugin that claims it).
     */
    private static void hostCopies(Path dir, RestoreSession session) throws ImageException {
        if (HostCopyImages.marked(dir).orElse(false)) {
            var records = HostCopyImages.readAll(dir);
            session.hostCopies(dir, records, HostCopyFill.defaultThreads());
            if (!records.isEmpty()) log.info("{} host copy record(s): put back by the plugin before the CUDA restore", records.size());
        } else if (!HostCopyImages.files(dir).isEmpty()) {
            log.warn("{}: cuda-hostcopy-*.img present but inventory.img does not require {}: left from another dump, ignored",
                    dir, HostCopyImages.MARKER);
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
                    + CudaPlugin.NAME + "), and without its task list the tasks with no cuda-plugin-<pid>.img cannot be "
                    + "restored: nothing was restored");
        }
        log.warn("{}; tasks without a cuda-plugin-<pid>.img are not restored", e.getMessage());
        return null;
    }
}

package dev.criugpu.amdgpu;

import dev.criugpu.amdgpu.dump.AmdgpuDumpSession;
import dev.criugpu.amdgpu.restore.AmdgpuRestoreSession;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuPlugin;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.DeviceFile;
import dev.criugpu.api.Diagnosis;
import dev.criugpu.api.Errno;
import dev.criugpu.api.Hook;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.sys.Syscalls;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * AMD KFD plugin ({@code amdgpu_plugin}, image-compatible with criu v4.2's). Dump: KFD and render-node fds and
 * mappings, BO contents through SDMA. Restore: the plan and the refill socket (already accepting) before criu
 * forks, KFD RESTORE and the mapping updates natively in the restored tasks, BO contents refilled from criu's main
 * process while the tasks restore their memory, queues resumed once every refill is done. The socket is served
 * from init rather than from POST_FORKING, which criu before 4.2 does not call: a task must never wait for a
 * server that is not there.
 */
public final class AmdgpuPlugin implements CriuPlugin {
    public static final String NAME = "amdgpu_plugin";
    private static final Logger log = LoggerFactory.getLogger(AmdgpuPlugin.class);

    private final Function<CriuServices, AmdgpuHost> hosts;
    private AmdgpuDumpSession dump;
    private AmdgpuRestoreSession restore;

    public AmdgpuPlugin() {
        this(AmdgpuHost::system);
    }

    /** With another host (the simulated KFD in tests). */
    public AmdgpuPlugin(Function<CriuServices, AmdgpuHost> hosts) {
        this.hosts = hosts;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<Hook> hooks() {
        return EnumSet.of(Hook.DUMP_EXT_FILE, Hook.RESTORE_EXT_FILE, Hook.HANDLE_DEVICE_VMA, Hook.UPDATE_VMA_MAP,
                Hook.RESUME_DEVICES_LATE);
    }

    @Override
    public int init(Stage stage, CriuServices services) {
        dump = null;
        restore = null;
        Optional<Path> images = services.imageDir();
        if (stage == Stage.DUMP && images.isPresent()) {
            dump = new AmdgpuDumpSession(hosts.apply(services), services, images.get());
        } else if (stage == Stage.RESTORE && images.isPresent()) {
            if (services.inventoryClaim() != InventoryClaim.NOT_LISTED) {
                try {
                    restore = AmdgpuRestoreSession.open(hosts.apply(services), services, images.get()).orElse(null);
                } catch (CriuException e) {
                    log.error("cannot restore AMD GPU state: {}", e.getMessage());
                    return -Math.abs(e.errno());
                }
            }
        }
        log.info("Java side ready for {}", stage);
        return 0;
    }

    /** The restore probe's part: the images' GPUs must match this host's and the restore's plan must build. */
    @Override
    public int checkRestore(CriuServices services) {
        Optional<Path> images = services.imageDir();
        if (images.isEmpty() || services.inventoryClaim() == InventoryClaim.NOT_LISTED) return 0;
        try {
            AmdgpuRestoreSession.check(hosts.apply(services), images.get());
            return 0;
        } catch (CriuException e) {
            log.error("cannot restore AMD GPU state: {}", e.getMessage());
            return -Math.abs(e.errno());
        }
    }

    @Override
    public void exit(Stage stage, int ret) {
        if (restore != null) restore.close();
        restore = null;
        dump = null;
    }

    @Override
    public int handleDeviceVma(int fd, DeviceFile file) {
        return dump == null ? Errno.NOT_SUPPORTED : dump.handleDeviceVma(file.rdev());
    }

    @Override
    public int dumpExtFile(int fd, int id) {
        return dump == null ? Errno.NOT_SUPPORTED : dump.dumpExtFile(fd, id);
    }

    @Override
    public int resumeDevicesLate(int pid) {
        return restore == null ? Errno.NOT_SUPPORTED : restore.resume(pid);
    }

    @Override
    public Diagnosis diagnose() {
        return AmdgpuDiagnosis.run(Syscalls.libc(), SysfsTopologyReader.DEFAULT_ROOT);
    }
}

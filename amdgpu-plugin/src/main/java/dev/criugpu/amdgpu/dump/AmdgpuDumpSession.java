package dev.criugpu.amdgpu.dump;

import dev.criugpu.amdgpu.AmdgpuHost;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.ImageFormat;
import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Errno;

import java.nio.file.Path;

/**
 * The dump side of one criu dump: accepts KFD and render-node mappings (HANDLE_DEVICE_VMA), dumps KFD and
 * render-node fds in whatever order criu hands them over (DUMP_EXT_FILE), and records {@code amdgpu_plugin} in
 * the inventory once KFD state is saved. Anything else is left to other plugins. The KFD topology is read on the
 * first AMD file.
 */
public final class AmdgpuDumpSession {
    private final AmdgpuHost host;
    private final CriuServices services;
    private final Path imagesDir;
    private KfdFileDumper kfd;
    private RenderNodeDumper render;
    private boolean inventoryRecorded;

    public AmdgpuDumpSession(AmdgpuHost host, CriuServices services, Path imagesDir) {
        this.host = host;
        this.services = services;
        this.imagesDir = imagesDir;
    }

    public int handleDeviceVma(long rdev) {
        return host.devices().classifyVma(rdev) == DeviceClassifier.Kind.OTHER ? Errno.NOT_SUPPORTED : 0;
    }

    public int dumpExtFile(int fd, int id) {
        long rdev = host.sys().rdev(fd);
        switch (host.devices().classifyFile(rdev)) {
            case KFD -> {
                named(ImageNames.kfd(id), () -> {
                    dumpers();
                    kfd.dump(fd, id);
                    render.reconcile();
                });
                if (!inventoryRecorded) inventoryRecorded = services.addInventoryPlugin();
                return 0;
            }
            case RENDER_NODE -> {
                named(ImageNames.renderNode(id), () -> {
                    dumpers();
                    render.dump(DeviceNumbers.minor(rdev), id);
                });
                return 0;
            }
            default -> {
                return Errno.NOT_SUPPORTED;
            }
        }
    }

    /** Runs {@code step}; a failure's one line starts with the image it was writing. */
    private static void named(String image, Runnable step) {
        try {
            step.run();
        } catch (CriuException e) {
            if (e.getMessage().startsWith(image) || e.getMessage().startsWith("amdgpu-pages-")) throw e;
            throw new CriuException(e.errno(), image + ": " + e.getMessage(), e);
        }
    }

    private void dumpers() {
        if (kfd != null) return;
        Topology topology = new SysfsTopologyReader(host.topologyRoot()).read("Checkpoint");
        AmdgpuImages images = new AmdgpuImages(imagesDir);
        ImageFormat format = ImageFormat.fromEnvironment(host.env());
        kfd = new KfdFileDumper(host.sys(), images, topology, host.hsakmtShm(), MaxBufferSize.fromEnvironment(host.env()),
                format);
        render = new RenderNodeDumper(images, topology, kfd::checkpointMaps, format);
    }
}

package dev.criugpu.amdgpu.dump;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * Tells KFD and DRM render-node files apart by device number, the way upstream does: the KFD has the major
 * of {@code /dev/kfd}; render nodes have the major of {@code /dev/dri/renderD128} and a minor in
 * [minor(renderD128), 255]. Unlike upstream v4.2, any other character device is reported as {@link Kind#OTHER}
 * so the hook can leave it to other plugins.
 */
public final class DeviceClassifier {
    public static final Path KFD = Path.of("/dev/kfd");
    public static final Path FIRST_RENDER_NODE = Path.of("/dev/dri/renderD128");
    public static final int LAST_RENDER_MINOR = 255;

    public enum Kind { KFD, RENDER_NODE, OTHER }

    private final OptionalLong kfd;
    private final OptionalLong firstRender;

    public DeviceClassifier(OptionalLong kfdRdev, OptionalLong firstRenderRdev) {
        this.kfd = kfdRdev;
        this.firstRender = firstRenderRdev;
    }

    /** Reads the device numbers of {@code kfdPath} and {@code firstRenderPath}; a missing file matches nothing. */
    public static DeviceClassifier of(Path kfdPath, Path firstRenderPath) {
        return new DeviceClassifier(rdev(kfdPath), rdev(firstRenderPath));
    }

    public static DeviceClassifier system() {
        return of(KFD, FIRST_RENDER_NODE);
    }

    /** st_rdev of a device file, empty when it cannot be stat'ed. */
    public static OptionalLong rdev(Path p) {
        try {
            return OptionalLong.of((Long) Files.getAttribute(p, "unix:rdev"));
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return OptionalLong.empty();
        }
    }

    /** An fd criu hands DUMP_EXT_FILE: the KFD only with minor 0. */
    public Kind classifyFile(long rdev) {
        if (kfd.isPresent() && DeviceNumbers.major(rdev) == DeviceNumbers.major(kfd.getAsLong())
                && DeviceNumbers.minor(rdev) == 0) {
            return Kind.KFD;
        }
        return isRenderNode(rdev) ? Kind.RENDER_NODE : Kind.OTHER;
    }

    /** A device mapping HANDLE_DEVICE_VMA sees: any minor of the KFD major counts. */
    public Kind classifyVma(long rdev) {
        if (kfd.isPresent() && DeviceNumbers.major(rdev) == DeviceNumbers.major(kfd.getAsLong())) return Kind.KFD;
        return isRenderNode(rdev) ? Kind.RENDER_NODE : Kind.OTHER;
    }

    private boolean isRenderNode(long rdev) {
        if (firstRender.isEmpty()) return false;
        long r = firstRender.getAsLong();
        int minor = DeviceNumbers.minor(rdev);
        return DeviceNumbers.major(rdev) == DeviceNumbers.major(r)
                && minor >= DeviceNumbers.minor(r) && minor <= LAST_RENDER_MINOR;
    }
}

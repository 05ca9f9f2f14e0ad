package dev.criugpu.amdgpu.images;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.util.Map;

/**
 * Which of upstream's two image formats a dump writes ({@code AMDGPU_IMAGE_FORMAT}: {@code criu-dev}, the default,
 * or {@code v4.2}). A restore reads both.
 *
 * <p>criu-dev (criu 4.3 to be) made new fields required: {@code kfd_bo_entry.handle} and
 * {@code criu_render_node.id/drm_render_minor/num_of_bos}. Its plugin unpacks with protobuf-c, which rejects a
 * message that lacks a required field, so it cannot restore v4.2 images at all; criu 4.2.1's plugin skips fields
 * it does not know, so it restores criu-dev images as long as they hold nothing only criu-dev has (DRM BOs,
 * dma-buf fds), and this plugin never writes those. The criu-dev format therefore restores with either upstream
 * plugin and is the default; {@code v4.2} writes exactly what criu 4.2.1's plugin writes (kept for byte-level
 * comparison with it).
 */
public enum ImageFormat {
    V4_2("v4.2"),
    CRIU_DEV("criu-dev");

    public static final String ENV = "AMDGPU_IMAGE_FORMAT";
    /** {@code kfd_bo_entry.handle} for a BO without a GEM handle in criu's render fds (criu-dev's -1). */
    public static final int NO_HANDLE = 0xFFFFFFFF;

    private final String label;

    ImageFormat(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }

    public static ImageFormat fromEnvironment(Map<String, String> env) {
        String v = env.get(ENV);
        if (v == null || v.isEmpty()) return CRIU_DEV;
        for (ImageFormat f : values()) {
            if (f.label.equals(v)) return f;
        }
        throw new CriuException(Errno.EINVAL, ENV + "=" + v + ": not an image format (criu-dev or v4.2)");
    }
}

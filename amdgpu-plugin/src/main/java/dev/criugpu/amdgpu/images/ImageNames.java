package dev.criugpu.amdgpu.images;

/** Names of the plugin's files in the images directory (upstream's formats: ids decimal, gpu ids %04x). */
public final class ImageNames {
    private ImageNames() {
    }

    public static String kfd(int fileId) {
        return "amdgpu-kfd-" + fileId + ".img";
    }

    public static String renderNode(int fileId) {
        return "amdgpu-renderD-" + fileId + ".img";
    }

    /** Contents of every VRAM/GTT BO of one (user) GPU of KFD file {@code fileId}, in bucket order. */
    public static String pages(int fileId, int gpuId) {
        return String.format("amdgpu-pages-%d-%04x.img", fileId, gpuId);
    }

    /** criu-dev: a dma-buf fd (note the underscore). */
    public static String dmabuf(int fileId) {
        return "amdgpu-dmabuf_" + fileId + ".img";
    }

    /** criu-dev: contents of DRM BO number {@code index} of render-node file {@code fileId} (renderD{@code minor}). */
    public static String drmPages(int fileId, int minor, int index) {
        return String.format("amdgpu-drm-pages-%d-%d-%04x.img", fileId, minor, index);
    }
}

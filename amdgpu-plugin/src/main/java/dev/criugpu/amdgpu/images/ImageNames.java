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
}

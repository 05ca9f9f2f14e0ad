package dev.criugpu.amdgpu.bindings;

/** Constants of {@code linux/kfd_sysfs.h} used to read the KFD topology, in the shape jextract generates. */
public final class kfd_sysfs_h {
    private kfd_sysfs_h() {
    }

    public static int HSA_MEM_HEAP_TYPE_SYSTEM() { return 0; }
    public static int HSA_MEM_HEAP_TYPE_FB_PUBLIC() { return 1; }
    public static int HSA_MEM_HEAP_TYPE_FB_PRIVATE() { return 2; }

    public static int HSA_IOLINK_TYPE_PCIEXPRESS() { return 2; }
    public static int HSA_IOLINK_TYPE_XGMI() { return 11; }
}

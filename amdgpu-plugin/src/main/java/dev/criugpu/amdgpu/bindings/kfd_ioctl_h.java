package dev.criugpu.amdgpu.bindings;

/**
 * Constants of {@code linux/kfd_ioctl.h} that the plugin uses, in the shape jextract generates (one static
 * method per constant). The ioctl numbers are function-like macros in C, so jextract would not emit them; they
 * are computed here with the kernel's {@code _IOC} encoding and checked against the header by
 * {@code LayoutConformanceTest}, like every other constant of this class.
 */
public final class kfd_ioctl_h {
    private kfd_ioctl_h() {
    }

    private static final int IOC_WRITE = 1;
    private static final int IOC_READ = 2;

    /** The kernel's {@code _IOC(dir, type, nr, size)} on x86-64. */
    static int _IOC(int dir, int type, int nr, long size) {
        return (dir << 30) | ((int) size << 16) | (type << 8) | nr;
    }

    public static int KFD_IOCTL_MAJOR_VERSION() { return 1; }

    /** Minor version of the header the bindings were checked against (Linux 6.1 UAPI). */
    public static int KFD_IOCTL_MINOR_VERSION() { return 11; }

    public static int AMDKFD_IOCTL_BASE() { return 'K'; }

    public static int AMDKFD_IOC_GET_VERSION() {
        return _IOC(IOC_READ, 'K', 0x01, kfd_ioctl_get_version_args.sizeof());
    }

    public static int AMDKFD_IOC_CRIU_OP() {
        return _IOC(IOC_READ | IOC_WRITE, 'K', 0x22, kfd_ioctl_criu_args.sizeof());
    }

    public static int AMDKFD_IOC_AVAILABLE_MEMORY() {
        return _IOC(IOC_READ | IOC_WRITE, 'K', 0x23, kfd_ioctl_get_available_memory_args.sizeof());
    }

    // enum kfd_criu_op
    public static int KFD_CRIU_OP_PROCESS_INFO() { return 0; }
    public static int KFD_CRIU_OP_CHECKPOINT() { return 1; }
    public static int KFD_CRIU_OP_UNPAUSE() { return 2; }
    public static int KFD_CRIU_OP_RESTORE() { return 3; }
    public static int KFD_CRIU_OP_RESUME() { return 4; }

    public static int KFD_INVALID_FD() { return 0xFFFFFFFF; }

    public static int KFD_IOC_ALLOC_MEM_FLAGS_VRAM() { return 1; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_GTT() { return 1 << 1; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_USERPTR() { return 1 << 2; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL() { return 1 << 3; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP() { return 1 << 4; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE() { return 1 << 31; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE() { return 1 << 30; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC() { return 1 << 29; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE() { return 1 << 28; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM() { return 1 << 27; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_COHERENT() { return 1 << 26; }
    public static int KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED() { return 1 << 25; }
}

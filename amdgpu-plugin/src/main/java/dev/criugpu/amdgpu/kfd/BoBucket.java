package dev.criugpu.amdgpu.kfd;

import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;

/** One buffer object of a CRIU CHECKPOINT/RESTORE ({@code struct kfd_criu_bo_bucket}); gpuId is the user id. */
public record BoBucket(long addr, long size, long offset, long restoredOffset, int gpuId, int allocFlags, int dmabufFd) {
    /** VRAM and GTT BOs have contents to copy and get a dma-buf fd. */
    public boolean hasContents() {
        return hasContents(allocFlags);
    }

    public static boolean hasContents(int allocFlags) {
        return (allocFlags & (kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM() | kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_GTT())) != 0;
    }

    public boolean hasDmabuf() {
        return dmabufFd != kfd_ioctl_h.KFD_INVALID_FD();
    }
}

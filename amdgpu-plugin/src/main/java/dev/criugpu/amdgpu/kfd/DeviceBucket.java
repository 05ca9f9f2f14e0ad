package dev.criugpu.amdgpu.kfd;

/** One GPU of a CRIU CHECKPOINT/RESTORE ({@code struct kfd_criu_device_bucket}). */
public record DeviceBucket(int userGpuId, int actualGpuId, int drmFd) {
}

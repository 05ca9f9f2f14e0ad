package dev.criugpu.amdgpu.kfd;

import java.util.List;

/** The result of CRIU_OP CHECKPOINT: devices, BOs (with dma-buf fds now open in the caller) and the private blob. */
public record KfdCheckpoint(List<DeviceBucket> devices, List<BoBucket> bos, byte[] privData) {
}

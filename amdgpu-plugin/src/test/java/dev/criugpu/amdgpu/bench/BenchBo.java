package dev.criugpu.amdgpu.bench;

/**
 * One benchmark BO: its index in the KFD image, its GPU (user id), its size, the fd holding its checkpointed
 * contents (a dma-buf fd from CHECKPOINT, i.e. a dup of the simulated BO's memfd) and the memfd it is refilled into.
 */
record BenchBo(int index, int userGpuId, long size, int sourceFd, int targetFd) {
}

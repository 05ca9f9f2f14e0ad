package dev.criugpu.amdgpu.restore;

/**
 * One refill request as received from a restored task: the KFD image it restored, the task's pid in its own pid
 * namespace, and one dma-buf fd per VRAM/GTT BO, by index in the image's BO list. The fds are open in this
 * process; whoever takes the request closes them.
 */
public record RefillRequest(int fileId, int taskPid, int[] boIndices, int[] fds) {
}

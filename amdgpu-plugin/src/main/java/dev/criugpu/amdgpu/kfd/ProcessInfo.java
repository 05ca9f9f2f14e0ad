package dev.criugpu.amdgpu.kfd;

/** What CRIU_OP PROCESS_INFO reports: the owner's virtual pid and the sizes CHECKPOINT needs. */
public record ProcessInfo(int pid, int numDevices, int numBos, int numObjects, long privDataSize) {
}

package dev.criugpu.cuda.gpu;

/** One NVIDIA GPU as /proc/driver/nvidia/gpus/<bus>/information shows it. */
public record GpuInfo(GpuUuid uuid, int minor, String model, String busId) {
}

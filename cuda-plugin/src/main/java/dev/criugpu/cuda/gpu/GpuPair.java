package dev.criugpu.cuda.gpu;

/** A checkpointed GPU and the GPU to restore it onto (CUcheckpointGpuPair). */
public record GpuPair(GpuUuid oldUuid, GpuUuid newUuid) {
    @Override
    public String toString() {
        return oldUuid + "=" + newUuid;
    }
}

package dev.criugpu.amdgpu.topology;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The outcome of matching a checkpointed topology to the local one: checkpointed (user) gpu id → local gpu id,
 * and checkpointed CPU node → local CPU node (kept only to enforce NUMA consistency).
 */
public final class GpuMapping {
    private final Map<Integer, Integer> gpus;
    private final Map<Integer, Integer> cpus;

    public GpuMapping(Map<Integer, Integer> gpus, Map<Integer, Integer> cpus) {
        this.gpus = Collections.unmodifiableMap(new LinkedHashMap<>(gpus));
        this.cpus = Collections.unmodifiableMap(new LinkedHashMap<>(cpus));
    }

    public Map<Integer, Integer> gpus() {
        return gpus;
    }

    public Map<Integer, Integer> cpus() {
        return cpus;
    }

    /** The local gpu id for a checkpointed one. */
    public int localGpu(int checkpointedGpuId) {
        Integer g = gpus.get(checkpointedGpuId);
        if (g == null) {
            throw new CriuException(Errno.ENODEV, String.format("checkpointed GPU 0x%04x has no local GPU", checkpointedGpuId));
        }
        return g;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        gpus.forEach((s, d) -> b.append(b.isEmpty() ? "" : ", ").append(String.format("0x%04x->0x%04x", s, d)));
        return "GPU map {" + b + "}";
    }
}

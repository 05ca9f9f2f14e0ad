package dev.criugpu.cuda.gpu;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a dump recorded of one task's GPUs: the ones holding its CUDA state ({@code checkpointed}, which a restore
 * must place) and every GPU it could see ({@code visible}, a superset, each of which a remapping restore must list).
 */
public record TaskGpuRecord(List<GpuInfo> checkpointed, List<GpuInfo> visible) {
    public TaskGpuRecord {
        checkpointed = List.copyOf(checkpointed);
        visible = List.copyOf(visible);
    }

    /**
     * @param mapped the GPUs whose device file the task had mapped, each with the MiB nvidia-smi showed it holding
     *               there at dump (0: none, or nvidia-smi could not say)
     * @param visible the GPUs it could see besides
     */
    public static TaskGpuRecord of(Map<GpuInfo, Long> mapped, List<GpuInfo> visible) {
        // CUDA maps the device file of every GPU it initialises, not only of those it holds a context on; nvidia-smi
        // lists the task only where it holds one. So once any figure is known, the GPUs without memory are only seen.
        boolean known = mapped.values().stream().anyMatch(mib -> mib > 0);
        List<GpuInfo> checkpointed = new ArrayList<>();
        Map<GpuUuid, GpuInfo> all = new LinkedHashMap<>();
        mapped.forEach((g, mib) -> {
            if (!known || mib > 0) checkpointed.add(g);
            all.putIfAbsent(g.uuid(), g);
        });
        for (GpuInfo g : visible) all.putIfAbsent(g.uuid(), g);
        return new TaskGpuRecord(checkpointed, new ArrayList<>(all.values()));
    }

    public List<GpuUuid> checkpointedUuids() {
        return checkpointed.stream().map(GpuInfo::uuid).toList();
    }
}

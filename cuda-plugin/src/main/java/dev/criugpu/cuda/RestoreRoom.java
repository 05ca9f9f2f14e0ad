package dev.criugpu.cuda;

import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.GpuMapping;
import dev.criugpu.cuda.gpu.GpuMemory;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.image.CudaGpuEntry;
import dev.criugpu.cuda.image.CudaTaskEntry;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/** Whether the GPUs a restore goes to have room for the device memory the dump recorded. */
final class RestoreRoom {
    private RestoreRoom() {
    }

    /**
     * Null when each target GPU has room for the tasks going there (or nothing was recorded, or the driver's tools
     * cannot say), else one line naming the GPU and the figures. {@code freeMib}: each GPU's free memory
     * ({@link dev.criugpu.cuda.gpu.GpuMemory#freeMib}, perhaps asked earlier), only asked when something was recorded.
     */
    static String check(Collection<Integer> pending, Map<Integer, CudaTaskEntry> records, GpuMapping plan, List<GpuInfo> present,
                        Supplier<Optional<Map<GpuUuid, Long>>> freeMib) {
        Map<GpuUuid, Long> need = new LinkedHashMap<>();
        Map<GpuUuid, List<Integer>> who = new LinkedHashMap<>();
        for (int nsPid : pending) {
            CudaTaskEntry e = records.get(nsPid);
            if (e == null) continue;
            for (CudaGpuEntry g : e.getGpusList()) {
                if (g.getUsedMib() <= 0) continue;
                GpuUuid to = plan.asMap().get(GpuUuid.parse(g.getUuid()));
                need.merge(to, g.getUsedMib(), Long::sum);
                who.computeIfAbsent(to, k -> new ArrayList<>()).add(nsPid);
            }
        }
        if (need.isEmpty()) return null;
        Map<GpuUuid, Long> free = freeMib.get().orElse(Map.of());
        for (var e : need.entrySet()) {
            Long room = free.get(e.getKey());
            if (room == null || room >= e.getValue()) continue;
            String model = present.stream().filter(g -> g.uuid().equals(e.getKey())).map(GpuInfo::model).findFirst().orElse("?");
            return "GPU " + e.getKey() + " (" + model + ") has " + room + " MiB free but the task(s) " + who.get(e.getKey())
                    + " going there held " + e.getValue() + " MiB at dump: too small to restore onto";
        }
        return null;
    }
}

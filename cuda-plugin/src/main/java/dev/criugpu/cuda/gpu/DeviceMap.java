package dev.criugpu.cuda.gpu;

import java.util.LinkedHashMap;
import java.util.Map;

/** Parses {@code oldUuid=newUuid,oldUuid=newUuid,...} (cuda-checkpoint's --device-map form). */
public final class DeviceMap {
    private DeviceMap() {
    }

    /**
     * @param what names the source in error messages, e.g. "CRIU_CUDA_DEVICE_MAP"
     * @throws IllegalArgumentException one line naming {@code what} and the bad entry
     */
    public static Map<GpuUuid, GpuUuid> parse(String text, String what) {
        Map<GpuUuid, GpuUuid> map = new LinkedHashMap<>();
        if (text == null || text.isBlank()) return map;
        for (String entry : text.split(",")) {
            String e = entry.trim();
            if (e.isEmpty()) continue;
            int eq = e.indexOf('=');
            if (eq < 0 || eq != e.lastIndexOf('=')) {
                throw new IllegalArgumentException(what + ": '" + e + "' is not of the form oldUuid=newUuid");
            }
            GpuUuid from;
            GpuUuid to;
            try {
                from = GpuUuid.parse(e.substring(0, eq));
                to = GpuUuid.parse(e.substring(eq + 1));
            } catch (IllegalArgumentException x) {
                throw new IllegalArgumentException(what + ": " + x.getMessage());
            }
            if (map.containsKey(from)) throw new IllegalArgumentException(what + ": " + from + " is mapped twice");
            if (map.containsValue(to)) throw new IllegalArgumentException(what + ": two GPUs are mapped onto " + to);
            map.put(from, to);
        }
        return map;
    }

    /** A uuid list such as {@code CRIU_CUDA_TREAT_ABSENT=uuid,uuid}. */
    public static java.util.Set<GpuUuid> parseList(String text, String what) {
        java.util.Set<GpuUuid> set = new java.util.LinkedHashSet<>();
        if (text == null || text.isBlank()) return set;
        for (String entry : text.split(",")) {
            if (entry.isBlank()) continue;
            try {
                set.add(GpuUuid.parse(entry));
            } catch (IllegalArgumentException x) {
                throw new IllegalArgumentException(what + ": " + x.getMessage());
            }
        }
        return set;
    }
}

package dev.criugpu.api;

import java.util.List;
import java.util.Map;

/**
 * What one plugin saved in a checkpoint: its files (name → size in bytes), the GPUs involved (UUIDs or ids),
 * and facts worth showing, in order.
 */
public record GpuState(String plugin, Map<String, Long> files, List<String> gpus, List<String> facts) {
    public GpuState {
        files = Map.copyOf(files);
        gpus = List.copyOf(gpus);
        facts = List.copyOf(facts);
    }
}

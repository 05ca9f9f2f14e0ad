package dev.criugpu.it;

import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The KFD topology the AMD ITs give their container (a tmpfs over /sys/class) and the same topology as the plugin
 * reads it: one CPU and one MI100-like GPU (gpu_id 0x1001, renderD128), linked by PCIe.
 */
final class FakeKfdTopology {
    static final int GPU = 0x1001;
    static final int RENDER_MINOR = 128;
    private static final String ROOT = "/sys/class/kfd/kfd/topology";

    private FakeKfdTopology() {
    }

    /** Shell commands that mount a tmpfs over the container's /sys/class and write the topology into it. */
    static String mountInContainer() {
        return "mount -t tmpfs tmpfs /sys/class && " + files(ROOT).entrySet().stream()
                .map(e -> "mkdir -p " + Path.of(e.getKey()).getParent() + " && printf '"
                        + e.getValue().replace("\n", "\\n") + "' > " + e.getKey())
                .collect(Collectors.joining(" && "));
    }

    /** The topology as the plugin reads it (written under {@code scratch} on this host). */
    static Topology read(Path scratch) throws IOException {
        Path sysfs = scratch.resolve("topology");
        for (var f : files(sysfs.toString()).entrySet()) {
            Files.createDirectories(Path.of(f.getKey()).getParent());
            Files.writeString(Path.of(f.getKey()), f.getValue());
        }
        return new SysfsTopologyReader(sysfs).read("Checkpoint");
    }

    private static Map<String, String> files(String root) {
        Map<String, String> f = new LinkedHashMap<>();
        f.put(root + "/nodes/0/gpu_id", "0\n");
        f.put(root + "/nodes/0/properties", "cpu_cores_count 16\nsimd_count 0\nmem_banks_count 1\nio_links_count 1\n");
        f.put(root + "/nodes/0/io_links/0/properties", "type 2\nnode_from 0\nnode_to 1\nweight 20\n");
        f.put(root + "/nodes/1/gpu_id", GPU + "\n");
        f.put(root + "/nodes/1/properties", String.join("\n", "cpu_cores_count 0", "simd_count 480", "mem_banks_count 1",
                "caches_count 200", "io_links_count 1", "max_waves_per_simd 8", "lds_size_in_kb 64", "gds_size_in_kb 0",
                "num_gws 64", "wave_front_size 64", "array_count 8", "simd_arrays_per_engine 1", "cu_per_simd_array 15",
                "simd_per_cu 4", "max_slots_scratch_cu 32", "vendor_id 4098", "device_id 29580", "location_id 769",
                "domain 0", "drm_render_minor " + RENDER_MINOR, "hive_id 0", "num_sdma_engines 2",
                "num_sdma_xgmi_engines 6", "num_sdma_queues_per_engine 8", "num_cp_queues 24", "fw_version 70",
                "capability 672", "sdma_fw_version 18") + "\n");
        f.put(root + "/nodes/1/mem_banks/0/properties", "heap_type 1\nsize_in_bytes 34359738368\nflags 0\n");
        f.put(root + "/nodes/1/io_links/0/properties", "type 2\nnode_from 1\nnode_to 0\nweight 20\n");
        return f;
    }
}

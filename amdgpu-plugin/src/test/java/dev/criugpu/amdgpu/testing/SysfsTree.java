package dev.criugpu.amdgpu.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a synthetic KFD topology in the sysfs layout ({@code nodes/N/{gpu_id,properties,mem_banks,io_links}}).
 * GPU nodes start from a template of MI100-like properties, so tests state only what they vary.
 */
public final class SysfsTree {
    public static final int PCIE = 2;
    public static final int XGMI = 11;
    public static final long GiB = 1L << 30;

    private final List<Node> nodes = new ArrayList<>();

    public Node cpu(int nodeId) {
        Node n = new Node(nodeId, 0);
        n.props.put("cpu_cores_count", 16L);
        n.props.put("simd_count", 0L);
        n.props.put("mem_banks_count", 1L);
        nodes.add(n);
        return n;
    }

    public Node gpu(int nodeId, int gpuId) {
        Node n = new Node(nodeId, gpuId);
        Map<String, Long> p = n.props;
        p.put("cpu_cores_count", 0L);
        p.put("simd_count", 480L);
        p.put("mem_banks_count", 1L);
        p.put("caches_count", 200L);
        p.put("io_links_count", 1L);
        p.put("max_waves_per_simd", 8L);
        p.put("lds_size_in_kb", 64L);
        p.put("gds_size_in_kb", 0L);
        p.put("num_gws", 64L);
        p.put("wave_front_size", 64L);
        p.put("array_count", 8L);
        p.put("simd_arrays_per_engine", 1L);
        p.put("cu_per_simd_array", 15L);
        p.put("simd_per_cu", 4L);
        p.put("max_slots_scratch_cu", 32L);
        p.put("vendor_id", 0x1002L);
        p.put("device_id", 0x738cL);
        p.put("location_id", 0x300L + nodeId);
        p.put("domain", 0L);
        p.put("drm_render_minor", 127L + nodeId);
        p.put("hive_id", 0L);
        p.put("num_sdma_engines", 2L);
        p.put("num_sdma_xgmi_engines", 6L);
        p.put("num_sdma_queues_per_engine", 8L);
        p.put("num_cp_queues", 24L);
        p.put("fw_version", 70L);
        p.put("capability", 0x2a0L);
        p.put("sdma_fw_version", 18L);
        n.banks.add(new long[]{1, 32 * GiB});
        nodes.add(n);
        return n;
    }

    public Node node(int nodeId) {
        return nodes.stream().filter(n -> n.nodeId == nodeId).findFirst().orElseThrow();
    }

    /** Links nodes a and b both ways with the same link type. */
    public SysfsTree connect(int type, int a, int b) {
        node(a).link(type, b);
        node(b).link(type, a);
        return this;
    }

    public final class Node {
        final int nodeId;
        final int gpuId;
        final Map<String, Long> props = new LinkedHashMap<>();
        final List<long[]> banks = new ArrayList<>();
        final List<long[]> links = new ArrayList<>();
        final List<String> extraLines = new ArrayList<>();
        String gpuIdText;

        Node(int nodeId, int gpuId) {
            this.nodeId = nodeId;
            this.gpuId = gpuId;
        }

        public Node prop(String key, long value) {
            props.put(key, value);
            return this;
        }

        /** Replaces the memory banks with one VRAM bank (heap 1 public, 2 private). */
        public Node vram(long bytes, boolean publicHeap) {
            banks.clear();
            banks.add(new long[]{0, 64 * GiB});
            banks.add(new long[]{publicHeap ? 1 : 2, bytes});
            return this;
        }

        public Node noVram() {
            banks.clear();
            banks.add(new long[]{0, 64 * GiB});
            return this;
        }

        /** Adds an io link and bumps io_links_count (GPU nodes keep the count equal to the links written). */
        public Node link(int type, int nodeTo) {
            links.add(new long[]{type, nodeTo});
            if (gpuId != 0) props.put("io_links_count", (long) links.size());
            return this;
        }

        public Node rawLine(String line) {
            extraLines.add(line);
            return this;
        }

        public Node gpuIdText(String text) {
            gpuIdText = text;
            return this;
        }

        public SysfsTree done() {
            return SysfsTree.this;
        }
    }

    /** Writes the tree under {@code root} and returns root. */
    public Path write(Path root) {
        try {
            for (Node n : nodes) {
                Path d = root.resolve("nodes").resolve(Integer.toString(n.nodeId));
                Files.createDirectories(d);
                Files.writeString(d.resolve("gpu_id"), n.gpuIdText != null ? n.gpuIdText : n.gpuId + "\n");
                StringBuilder props = new StringBuilder();
                n.props.forEach((k, v) -> props.append(k).append(' ').append(Long.toUnsignedString(v)).append('\n'));
                n.extraLines.forEach(l -> props.append(l).append('\n'));
                Files.writeString(d.resolve("properties"), props);
                for (int i = 0; i < n.banks.size(); i++) {
                    Path b = d.resolve("mem_banks").resolve(Integer.toString(i));
                    Files.createDirectories(b);
                    Files.writeString(b.resolve("properties"), "heap_type " + n.banks.get(i)[0] + "\nsize_in_bytes "
                            + n.banks.get(i)[1] + "\nflags 0\nwidth 4096\nmem_clk_max 1200\n");
                }
                for (int i = 0; i < n.links.size(); i++) {
                    Path l = d.resolve("io_links").resolve(Integer.toString(i));
                    Files.createDirectories(l);
                    Files.writeString(l.resolve("properties"), "type " + n.links.get(i)[0] + "\nversion_major 0\n"
                            + "node_from " + n.nodeId + "\nnode_to " + n.links.get(i)[1] + "\nweight 20\n");
                }
            }
            return root;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

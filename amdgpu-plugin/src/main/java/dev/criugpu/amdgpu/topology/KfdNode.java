package dev.criugpu.amdgpu.topology;

import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * One KFD topology node: a CPU ({@code gpuId == 0}) or a GPU, with its properties and its PCIe/XGMI links in
 * sysfs (or image) order.
 */
public final class KfdNode {
    private final int nodeId;
    private final int gpuId;
    private final boolean cpu;
    private final EnumMap<NodeProperty, Long> properties;
    private final List<IoLink> links;

    public KfdNode(int nodeId, int gpuId, boolean cpu, Map<NodeProperty, Long> properties, List<IoLink> links) {
        this.nodeId = nodeId;
        this.gpuId = gpuId;
        this.cpu = cpu;
        this.properties = new EnumMap<>(NodeProperty.class);
        this.properties.putAll(properties);
        this.links = List.copyOf(links);
    }

    public int nodeId() {
        return nodeId;
    }

    /** The GPU id (0 for a CPU). */
    public int gpuId() {
        return gpuId;
    }

    public boolean isCpu() {
        return cpu;
    }

    public boolean isGpu() {
        return !cpu;
    }

    /** A property's value, 0 when the node did not report it. */
    public long get(NodeProperty p) {
        return properties.getOrDefault(p, 0L);
    }

    public Map<NodeProperty, Long> properties() {
        return Collections.unmodifiableMap(properties);
    }

    public List<IoLink> links() {
        return links;
    }

    /** "node 2 (gpu 0x1a2b)" or "node 0 (cpu)": how messages name a node. */
    public String describe() {
        return "node " + nodeId + (cpu ? " (cpu)" : String.format(" (gpu 0x%04x)", gpuId));
    }

    @Override
    public String toString() {
        return describe();
    }
}

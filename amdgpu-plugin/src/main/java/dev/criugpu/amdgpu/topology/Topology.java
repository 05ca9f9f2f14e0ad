package dev.criugpu.amdgpu.topology;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A parsed KFD topology (the local one from sysfs, or a checkpointed one from an image): nodes in their system
 * order, which link is valid (its target is in this topology), which is bi-directional, and the XGMI hives.
 */
public final class Topology {
    private final String label;
    private final List<KfdNode> nodes;
    private final Map<Integer, KfdNode> byNodeId = new LinkedHashMap<>();
    private final List<List<KfdNode>> hives;

    public Topology(String label, List<KfdNode> nodes) {
        this.label = label;
        this.nodes = List.copyOf(nodes);
        for (KfdNode n : nodes) {
            if (byNodeId.putIfAbsent(n.nodeId(), n) != null) {
                throw new IllegalArgumentException(label + " topology has node " + n.nodeId() + " twice");
            }
        }
        this.hives = findHives();
    }

    /** The same topology with only the GPUs of {@code gpuIds} (all CPUs kept); links to the others become invalid. */
    public Topology onlyGpus(java.util.Set<Integer> gpuIds) {
        return new Topology(label, nodes.stream().filter(n -> n.isCpu() || gpuIds.contains(n.gpuId())).toList());
    }

    /** "Checkpoint" or "Local": used in messages. */
    public String label() {
        return label;
    }

    public List<KfdNode> nodes() {
        return nodes;
    }

    public List<KfdNode> gpus() {
        return nodes.stream().filter(KfdNode::isGpu).toList();
    }

    public List<KfdNode> cpus() {
        return nodes.stream().filter(KfdNode::isCpu).toList();
    }

    public Optional<KfdNode> node(int nodeId) {
        return Optional.ofNullable(byNodeId.get(nodeId));
    }

    public Optional<KfdNode> gpu(int gpuId) {
        return nodes.stream().filter(n -> n.isGpu() && n.gpuId() == gpuId).findFirst();
    }

    public Optional<KfdNode> gpuByRenderMinor(int minor) {
        return nodes.stream().filter(n -> n.isGpu() && n.get(NodeProperty.DRM_RENDER_MINOR) == minor).findFirst();
    }

    /** A link is valid when its target node is part of this topology (not hidden by a cgroup, say). */
    public boolean isValid(IoLink link) {
        return byNodeId.containsKey(link.nodeTo());
    }

    /** The target of a valid link. */
    public KfdNode target(IoLink link) {
        KfdNode n = byNodeId.get(link.nodeTo());
        if (n == null) throw new IllegalArgumentException("link to node " + link.nodeTo() + " is not valid in " + label);
        return n;
    }

    /** The target node has a link of the same type back to {@code from}. */
    public boolean isBidirectional(KfdNode from, IoLink link) {
        KfdNode to = byNodeId.get(link.nodeTo());
        if (to == null) return false;
        return to.links().stream().anyMatch(back -> back.type() == link.type() && back.nodeTo() == from.nodeId());
    }

    public List<IoLink> validLinks(KfdNode node) {
        return node.links().stream().filter(this::isValid).toList();
    }

    /** XGMI hives: groups of GPUs joined by bi-directional XGMI links, members in discovery order. */
    public List<List<KfdNode>> hives() {
        return hives;
    }

    private List<List<KfdNode>> findHives() {
        List<List<KfdNode>> groups = new ArrayList<>();
        for (KfdNode n : nodes) {
            if (!n.isGpu()) continue;
            for (IoLink l : n.links()) {
                if (l.type() != IoLink.XGMI || !isBidirectional(n, l) || !target(l).isGpu()) continue;
                List<KfdNode> group = groups.stream().filter(g -> g.contains(n)).findFirst().orElse(null);
                if (group == null) {
                    group = new ArrayList<>();
                    group.add(n);
                    groups.add(group);
                }
                KfdNode peer = target(l);
                if (!group.contains(peer)) group.add(peer);
            }
        }
        return groups.stream().map(List::copyOf).toList();
    }

    @Override
    public String toString() {
        return label + " topology " + nodes;
    }
}

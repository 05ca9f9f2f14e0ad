package dev.criugpu.amdgpu.dump;

import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.ImageFormat;
import dev.criugpu.amdgpu.images.proto.CriuRenderNode;
import dev.criugpu.amdgpu.topology.KfdNode;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Dumps a render-node fd: {@code amdgpu-renderD-<id>.img} records the user gpu id of the GPU behind the node,
 * found through the KFD topology (render minor → actual gpu id) and the checkpoint maps of the KFD fds dumped
 * so far (actual → user). criu dumps a task's fds in fd order, so a render fd may come before its KFD fd
 * (upstream v4.2 fails then): such a node is written with the actual id, which is the user id of a process that
 * was never migrated, and {@link #reconcile} rewrites it once a KFD dump says otherwise.
 */
public final class RenderNodeDumper {
    private final AmdgpuImages images;
    private final Topology topology;
    private final Supplier<Map<Integer, Integer>> checkpointMaps;
    /** file id → GPU (actual id, render minor) of nodes written before any KFD fd mapped their GPU. */
    private final Map<Integer, Provisional> provisional = new HashMap<>();
    private final ImageFormat format;

    private record Provisional(int actualGpuId, int renderMinor) {
    }

    public RenderNodeDumper(AmdgpuImages images, Topology topology, Supplier<Map<Integer, Integer>> checkpointMaps) {
        this(images, topology, checkpointMaps, ImageFormat.CRIU_DEV);
    }

    public RenderNodeDumper(AmdgpuImages images, Topology topology, Supplier<Map<Integer, Integer>> checkpointMaps,
                            ImageFormat format) {
        this.format = format;
        this.images = images;
        this.topology = topology;
        this.checkpointMaps = checkpointMaps;
    }

    public CriuRenderNode dump(int renderMinor, int fileId) {
        KfdNode gpu = topology.gpuByRenderMinor(renderMinor).orElseThrow(() -> new CriuException(Errno.ENODEV,
                "renderD" + renderMinor + " is not a GPU of the KFD topology"));
        Integer user = checkpointMaps.get().get(gpu.gpuId());
        if (user == null) {
            provisional.put(fileId, new Provisional(gpu.gpuId(), renderMinor));
            user = gpu.gpuId();
        }
        return write(fileId, user, renderMinor);
    }

    /** After a KFD dump: rewrites the provisional nodes whose GPU now has a user id. */
    public void reconcile() {
        Map<Integer, Integer> maps = checkpointMaps.get();
        provisional.entrySet().removeIf(e -> {
            Integer user = maps.get(e.getValue().actualGpuId());
            if (user == null) return false;
            if (user != e.getValue().actualGpuId()) write(e.getKey(), user, e.getValue().renderMinor());
            return true;
        });
    }

    /**
     * criu-dev's format adds the file id, the render minor and the node's DRM BOs: none, which is what criu-dev's
     * plugin writes on a kernel without AMDGPU_GEM_LIST_HANDLES (this plugin does not list or dump DRM BOs).
     */
    private CriuRenderNode write(int fileId, int userGpuId, int renderMinor) {
        CriuRenderNode.Builder b = CriuRenderNode.newBuilder().setGpuId(userGpuId);
        if (format == ImageFormat.CRIU_DEV) b.setId(fileId).setDrmRenderMinor(renderMinor).setNumOfBos(0);
        CriuRenderNode node = b.build();
        images.writeRenderNode(fileId, node);
        return node;
    }
}

package dev.criugpu.amdgpu.dump;

import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.proto.CriuRenderNode;
import dev.criugpu.amdgpu.topology.KfdNode;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.util.Map;
import java.util.function.Supplier;

/**
 * Dumps a render-node fd: {@code amdgpu-renderD-<id>.img} records the user gpu id of the GPU behind the node,
 * found through the KFD topology (render minor → actual gpu id) and the checkpoint maps of the KFD fds dumped
 * before it (actual → user).
 */
public final class RenderNodeDumper {
    private final AmdgpuImages images;
    private final Topology topology;
    private final Supplier<Map<Integer, Integer>> checkpointMaps;

    public RenderNodeDumper(AmdgpuImages images, Topology topology, Supplier<Map<Integer, Integer>> checkpointMaps) {
        this.images = images;
        this.topology = topology;
        this.checkpointMaps = checkpointMaps;
    }

    public CriuRenderNode dump(int renderMinor, int fileId) {
        KfdNode gpu = topology.gpuByRenderMinor(renderMinor).orElseThrow(() -> new CriuException(Errno.ENODEV,
                "renderD" + renderMinor + " is not a GPU of the KFD topology"));
        Integer user = checkpointMaps.get().get(gpu.gpuId());
        if (user == null) {
            throw new CriuException(Errno.ENODEV, String.format("renderD%d (GPU 0x%04x) belongs to no KFD fd dumped so"
                    + " far; a render node must be dumped after the KFD fd of its process", renderMinor, gpu.gpuId()));
        }
        CriuRenderNode node = CriuRenderNode.newBuilder().setGpuId(user).build();
        images.writeRenderNode(fileId, node);
        return node;
    }
}

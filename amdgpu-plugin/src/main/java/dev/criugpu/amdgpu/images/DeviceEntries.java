package dev.criugpu.amdgpu.images;

import dev.criugpu.amdgpu.images.proto.DevIolink;
import dev.criugpu.amdgpu.images.proto.KfdDeviceEntry;
import dev.criugpu.amdgpu.topology.IoLink;
import dev.criugpu.amdgpu.topology.KfdNode;
import dev.criugpu.amdgpu.topology.NodeProperty;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntUnaryOperator;

/** Converts between topology nodes and the image's {@code kfd_device_entry} list. */
public final class DeviceEntries {
    private DeviceEntries() {
    }

    /**
     * One entry per topology node, in topology order, gpu ids translated with {@code toUserGpuId} (actual →
     * user), only valid links stored.
     */
    public static List<KfdDeviceEntry> fromTopology(Topology topology, IntUnaryOperator toUserGpuId) {
        List<KfdDeviceEntry> out = new ArrayList<>();
        for (KfdNode n : topology.nodes()) {
            KfdDeviceEntry.Builder b = KfdDeviceEntry.newBuilder()
                    .setNodeId(n.nodeId())
                    .setGpuId(n.isGpu() ? toUserGpuId.applyAsInt(n.gpuId()) : 0)
                    .setGdsSizeInKb(0);
            for (NodeProperty p : NodeProperty.values()) set(b, p, entryValue(n, p));
            for (IoLink l : topology.validLinks(n)) {
                b.addIolinks(DevIolink.newBuilder().setType(l.type()).setNodeToId(l.nodeTo()));
            }
            out.add(b.build());
        }
        return out;
    }

    /** GPU fields are 0 for a CPU, and cpu_cores_count is 0 for a GPU (a restore tells them apart by it). */
    private static long entryValue(KfdNode n, NodeProperty p) {
        boolean coreCount = p == NodeProperty.CPU_CORES_COUNT;
        return n.isGpu() != coreCount ? n.get(p) : 0;
    }

    /** The checkpointed topology; an entry is a CPU when its cpu_cores_count is not 0 (as upstream decides). */
    public static Topology toTopology(List<KfdDeviceEntry> entries) {
        List<KfdNode> nodes = new ArrayList<>();
        for (KfdDeviceEntry e : entries) {
            Map<NodeProperty, Long> props = new EnumMap<>(NodeProperty.class);
            for (NodeProperty p : NodeProperty.values()) props.put(p, get(e, p));
            List<IoLink> links = e.getIolinksList().stream().map(l -> new IoLink(l.getType(), l.getNodeToId())).toList();
            boolean cpu = e.getCpuCoresCount() != 0;
            nodes.add(new KfdNode(e.getNodeId(), cpu ? 0 : e.getGpuId(), cpu, props, links));
        }
        try {
            return new Topology("Checkpoint", nodes);
        } catch (IllegalArgumentException ex) {
            throw new CriuException(Errno.EINVAL, ex.getMessage(), ex);
        }
    }

    private static int u32(NodeProperty p, long v) {
        if (v < 0 || v > 0xFFFFFFFFL) {
            throw new CriuException(Errno.EINVAL, p.key + " " + Long.toUnsignedString(v) + " does not fit the image's uint32");
        }
        return (int) v;
    }

    private static void set(KfdDeviceEntry.Builder b, NodeProperty p, long v) {
        switch (p) {
            case CPU_CORES_COUNT -> b.setCpuCoresCount(u32(p, v));
            case SIMD_COUNT -> b.setSimdCount(u32(p, v));
            case MEM_BANKS_COUNT -> b.setMemBanksCount(u32(p, v));
            case CACHES_COUNT -> b.setCachesCount(u32(p, v));
            case IO_LINKS_COUNT -> b.setIoLinksCount(u32(p, v));
            case MAX_WAVES_PER_SIMD -> b.setMaxWavesPerSimd(u32(p, v));
            case LDS_SIZE_IN_KB -> b.setLdsSizeInKb(u32(p, v));
            case NUM_GWS -> b.setNumGws(u32(p, v));
            case WAVE_FRONT_SIZE -> b.setWaveFrontSize(u32(p, v));
            case ARRAY_COUNT -> b.setArrayCount(u32(p, v));
            case SIMD_ARRAYS_PER_ENGINE -> b.setSimdArraysPerEngine(u32(p, v));
            case CU_PER_SIMD_ARRAY -> b.setCuPerSimdArray(u32(p, v));
            case SIMD_PER_CU -> b.setSimdPerCu(u32(p, v));
            case MAX_SLOTS_SCRATCH_CU -> b.setMaxSlotsScratchCu(u32(p, v));
            case VENDOR_ID -> b.setVendorId(u32(p, v));
            case DEVICE_ID -> b.setDeviceId(u32(p, v));
            case DOMAIN -> b.setDomain(u32(p, v));
            case DRM_RENDER_MINOR -> b.setDrmRenderMinor(u32(p, v));
            case HIVE_ID -> b.setHiveId(v);
            case NUM_SDMA_ENGINES -> b.setNumSdmaEngines(u32(p, v));
            case NUM_SDMA_XGMI_ENGINES -> b.setNumSdmaXgmiEngines(u32(p, v));
            case NUM_SDMA_QUEUES_PER_ENGINE -> b.setNumSdmaQueuesPerEngine(u32(p, v));
            case NUM_CP_QUEUES -> b.setNumCpQueues(u32(p, v));
            case FW_VERSION -> b.setFwVersion(u32(p, v));
            case CAPABILITY -> b.setCapability(u32(p, v));
            case SDMA_FW_VERSION -> b.setSdmaFwVersion(u32(p, v));
            case VRAM_PUBLIC -> b.setVramPublic(u32(p, v));
            case VRAM_SIZE -> b.setVramSize(v);
        }
    }

    private static long get(KfdDeviceEntry e, NodeProperty p) {
        return switch (p) {
            case CPU_CORES_COUNT -> Integer.toUnsignedLong(e.getCpuCoresCount());
            case SIMD_COUNT -> Integer.toUnsignedLong(e.getSimdCount());
            case MEM_BANKS_COUNT -> Integer.toUnsignedLong(e.getMemBanksCount());
            case CACHES_COUNT -> Integer.toUnsignedLong(e.getCachesCount());
            case IO_LINKS_COUNT -> Integer.toUnsignedLong(e.getIoLinksCount());
            case MAX_WAVES_PER_SIMD -> Integer.toUnsignedLong(e.getMaxWavesPerSimd());
            case LDS_SIZE_IN_KB -> Integer.toUnsignedLong(e.getLdsSizeInKb());
            case NUM_GWS -> Integer.toUnsignedLong(e.getNumGws());
            case WAVE_FRONT_SIZE -> Integer.toUnsignedLong(e.getWaveFrontSize());
            case ARRAY_COUNT -> Integer.toUnsignedLong(e.getArrayCount());
            case SIMD_ARRAYS_PER_ENGINE -> Integer.toUnsignedLong(e.getSimdArraysPerEngine());
            case CU_PER_SIMD_ARRAY -> Integer.toUnsignedLong(e.getCuPerSimdArray());
            case SIMD_PER_CU -> Integer.toUnsignedLong(e.getSimdPerCu());
            case MAX_SLOTS_SCRATCH_CU -> Integer.toUnsignedLong(e.getMaxSlotsScratchCu());
            case VENDOR_ID -> Integer.toUnsignedLong(e.getVendorId());
            case DEVICE_ID -> Integer.toUnsignedLong(e.getDeviceId());
            case DOMAIN -> Integer.toUnsignedLong(e.getDomain());
            case DRM_RENDER_MINOR -> Integer.toUnsignedLong(e.getDrmRenderMinor());
            case HIVE_ID -> e.getHiveId();
            case NUM_SDMA_ENGINES -> Integer.toUnsignedLong(e.getNumSdmaEngines());
            case NUM_SDMA_XGMI_ENGINES -> Integer.toUnsignedLong(e.getNumSdmaXgmiEngines());
            case NUM_SDMA_QUEUES_PER_ENGINE -> Integer.toUnsignedLong(e.getNumSdmaQueuesPerEngine());
            case NUM_CP_QUEUES -> Integer.toUnsignedLong(e.getNumCpQueues());
            case FW_VERSION -> Integer.toUnsignedLong(e.getFwVersion());
            case CAPABILITY -> Integer.toUnsignedLong(e.getCapability());
            case SDMA_FW_VERSION -> Integer.toUnsignedLong(e.getSdmaFwVersion());
            case VRAM_PUBLIC -> Integer.toUnsignedLong(e.getVramPublic());
            case VRAM_SIZE -> e.getVramSize();
        };
    }
}

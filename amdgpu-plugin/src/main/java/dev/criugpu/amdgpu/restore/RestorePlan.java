package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.DeviceEntries;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.CriuRenderNode;
import dev.criugpu.amdgpu.topology.GpuMapping;
import dev.criugpu.amdgpu.topology.NodeProperty;
import dev.criugpu.amdgpu.topology.RestoreGpuMap;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.plan.ChildPlan;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.IntUnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The AMD restore plan, built in criu's main process before it forks: each checkpointed GPU mapped to a local one,
 * and a {@link ChildPlan} with a program per amdgpu KFD and render-node image of the images directory
 * ({@link KfdPrograms}). The restored tasks inherit it and the shim's executor runs it; it must stay alive until the
 * restore ends.
 */
public final class RestorePlan implements AutoCloseable {
    private static final Pattern KFD_FILE = Pattern.compile("amdgpu-kfd-(\\d+)\\.img");
    private static final Pattern RENDER_FILE = Pattern.compile("amdgpu-renderD-(\\d+)\\.img");
    private static final Pattern DMABUF_FILE = Pattern.compile("amdgpu-dmabuf_(\\d+)\\.img");

    private final ChildPlan plan;
    private final Map<Integer, GpuMapping> mappings;
    private final Map<Integer, CriuKfd> kfds;
    private final Topology local;

    private RestorePlan(ChildPlan plan, Map<Integer, GpuMapping> mappings, Map<Integer, CriuKfd> kfds, Topology local) {
        this.plan = plan;
        this.mappings = mappings;
        this.kfds = kfds;
        this.local = local;
    }

    /** The KFD images by file id. */
    public Map<Integer, CriuKfd> kfds() {
        return kfds;
    }

    /** The local render node of local GPU {@code actualGpuId}. */
    public int renderMinor(int actualGpuId) {
        return renderMinor(local, actualGpuId);
    }

    /** What the restored tasks run. */
    public ChildPlan childPlan() {
        return plan;
    }

    /** The local GPUs this restore copies to: each gets its refill worker before criu forks. */
    public Set<Integer> localGpus() {
        Set<Integer> gpus = new TreeSet<>();
        mappings.values().forEach(m -> gpus.addAll(m.gpus().values()));
        return gpus;
    }

    /** GPU map per KFD file id. */
    public Map<Integer, GpuMapping> mappings() {
        return mappings;
    }

    @Override
    public void close() {
        plan.close();
    }

    /**
     * Reads every amdgpu image of {@code images} and maps its GPUs onto {@code local}; {@code refillChannel} gives
     * the fdstore id of the socket each KFD image's task sends its dma-bufs on.
     */
    public static RestorePlan build(AmdgpuImages images, Topology local, Map<String, String> env, Consumer<String> errors,
                                    IntUnaryOperator refillChannel) {
        Map<Integer, CriuKfd> kfds = new TreeMap<>();
        List<Integer> renders = new ArrayList<>();
        scan(images.dir(), kfds, renders);

        Map<Integer, GpuMapping> mappings = new TreeMap<>();
        Map<Integer, Integer> userToLocal = new HashMap<>();
        for (var e : kfds.entrySet()) {
            String name = "amdgpu-kfd-" + e.getKey() + ".img";
            Topology checkpointed = DeviceEntries.toTopology(e.getValue().getDeviceEntriesList());
            GpuMapping m;
            try {
                m = RestoreGpuMap.decide(checkpointed, local, env, errors);
            } catch (CriuException ex) {
                throw new CriuException(ex.errno(), name + ": " + ex.getMessage(), ex);
            }
            mappings.put(e.getKey(), m);
            requireVram(name, e.getValue(), m, local);
            for (var g : m.gpus().entrySet()) {
                Integer before = userToLocal.putIfAbsent(g.getKey(), g.getValue());
                if (before != null && !before.equals(g.getValue())) {
                    throw new CriuException(Errno.EINVAL, String.format("%s: GPU 0x%04x maps to 0x%04x here but to"
                            + " 0x%04x for another process", name, g.getKey(), g.getValue(), before));
                }
            }
        }

        ChildPlan plan = new ChildPlan("amdgpu");
        try {
            KfdPrograms programs = new KfdPrograms(plan, local);
            for (var e : kfds.entrySet()) {
                programs.addKfd(e.getKey(), e.getValue(), mappings.get(e.getKey()), refillChannel.applyAsInt(e.getKey()));
            }
            for (int id : renders) {
                CriuRenderNode node = images.readRenderNode(id);
                if (node.getNumOfBos() != 0) {
                    // criu-dev's DRM BOs (GEM_CREATE, GEM_CHANGE_HANDLE, GEM_VA, drm-pages files): not restored here.
                    throw new CriuException(Errno.ENOTSUP, String.format("amdgpu-renderD-%d.img: holds %d DRM buffer"
                            + " objects (criu-dev), which this plugin does not restore", id, node.getNumOfBos()));
                }
                int user = node.getGpuId();
                Integer actual = userToLocal.get(user);
                if (actual == null) {
                    throw new CriuException(Errno.ENODEV, String.format("amdgpu-renderD-%d.img: GPU 0x%04x is in no"
                            + " KFD image", id, user));
                }
                programs.addRender(id, renderMinor(local, actual));
            }
            plan.sealed();
            return new RestorePlan(plan, Map.copyOf(mappings), Map.copyOf(kfds), local);
        } catch (RuntimeException e) {
            plan.close();
            throw e;
        }
    }

    /** The VRAM BOs of each checkpointed GPU must fit the VRAM of the local GPU they go to. */
    private static void requireVram(String image, CriuKfd kfd, GpuMapping m, Topology local) {
        for (var v : AmdgpuImages.vramBytes(kfd).entrySet()) {
            int actual = m.localGpu(v.getKey());
            long vram = local.gpu(actual).orElseThrow().get(NodeProperty.VRAM_SIZE);
            if (Long.compareUnsigned(v.getValue(), vram) > 0) {
                throw new CriuException(Errno.ENOSPC, String.format("%s: the VRAM BOs of GPU 0x%04x hold %d bytes, more"
                        + " than the %d bytes of VRAM of local GPU 0x%04x", image, v.getKey(), v.getValue(), vram, actual));
            }
        }
    }

    private static void scan(Path dir, Map<Integer, CriuKfd> kfds, List<Integer> renders) {
        AmdgpuImages images = new AmdgpuImages(dir);
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "amdgpu-*.img")) {
            for (Path p : ds) {
                String n = p.getFileName().toString();
                Matcher k = KFD_FILE.matcher(n);
                Matcher r = RENDER_FILE.matcher(n);
                if (k.matches()) {
                    int id = Integer.parseInt(k.group(1));
                    kfds.put(id, images.readKfd(id));
                } else if (r.matches()) {
                    renders.add(Integer.parseInt(r.group(1)));
                } else if (DMABUF_FILE.matcher(n).matches()) {
                    // criu-dev's dma-buf fds share a BO of another fd through the GEM handle in its image.
                    throw new CriuException(Errno.ENOTSUP, n + ": a dma-buf fd (criu-dev), which this plugin does not"
                            + " restore");
                }
            }
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, "cannot list images directory " + dir + ": " + e.getMessage(), e);
        }
        renders.sort(null);
    }

    static int renderMinor(Topology local, int actualGpuId) {
        return (int) local.gpu(actualGpuId).orElseThrow().get(NodeProperty.DRM_RENDER_MINOR);
    }
}

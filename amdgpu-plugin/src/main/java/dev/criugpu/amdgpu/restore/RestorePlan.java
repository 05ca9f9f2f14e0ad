package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.bindings.amdgpu_plan;
import dev.criugpu.amdgpu.bindings.amdgpu_plan_bo;
import dev.criugpu.amdgpu.bindings.amdgpu_plan_gpu;
import dev.criugpu.amdgpu.bindings.amdgpu_plan_kfd;
import dev.criugpu.amdgpu.bindings.amdgpu_plan_render;
import dev.criugpu.amdgpu.bindings.amdgpu_restore_h;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.DeviceEntries;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.images.proto.KfdDeviceEntry;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.amdgpu.topology.GpuMapping;
import dev.criugpu.amdgpu.topology.NodeProperty;
import dev.criugpu.amdgpu.topology.RestoreGpuMap;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The restore plan (struct amdgpu_plan of src/main/c/amdgpu_restore.h) in native memory, built in criu's main
 * process before it forks: every amdgpu KFD and render-node image of the images directory, each checkpointed
 * GPU mapped to a local one. The restored tasks inherit it and the C executor runs it; it must stay alive
 * (and unchanged) until the restore ends.
 */
public final class RestorePlan implements AutoCloseable {
    private static final Pattern KFD_FILE = Pattern.compile("amdgpu-kfd-(\\d+)\\.img");
    private static final Pattern RENDER_FILE = Pattern.compile("amdgpu-renderD-(\\d+)\\.img");

    private final Arena arena;
    private final MemorySegment plan;
    private final Map<Integer, GpuMapping> mappings;
    private final Map<Integer, CriuKfd> kfds;
    private final Topology local;

    private RestorePlan(Arena arena, MemorySegment plan, Map<Integer, GpuMapping> mappings, Map<Integer, CriuKfd> kfds,
                        Topology local) {
        this.arena = arena;
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

    /** Where restored tasks send their refill requests; set before criu forks. */
    public void refillSocket(UnixSockets.Address address) {
        MemorySegment.copy(address.bytes(), 0, amdgpu_plan.refill_addr(plan), ValueLayout.JAVA_BYTE, 0, address.bytes().length);
        amdgpu_plan.refill_addr_len(plan, address.length());
    }

    /** Address of the plan, for the executor. */
    public MemorySegment address() {
        return plan;
    }

    /** GPU map per KFD file id. */
    public Map<Integer, GpuMapping> mappings() {
        return mappings;
    }

    public boolean isEmpty() {
        return amdgpu_plan.num_kfd(plan) == 0 && amdgpu_plan.num_render(plan) == 0;
    }

    @Override
    public void close() {
        arena.close();
    }

    /** Reads every amdgpu image of {@code images} and maps its GPUs onto {@code local}. */
    public static RestorePlan build(AmdgpuImages images, Topology local, Map<String, String> env, Consumer<String> errors) {
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
            for (var g : m.gpus().entrySet()) {
                Integer before = userToLocal.putIfAbsent(g.getKey(), g.getValue());
                if (before != null && !before.equals(g.getValue())) {
                    throw new CriuException(Errno.EINVAL, String.format("%s: GPU 0x%04x maps to 0x%04x here but to"
                            + " 0x%04x for another process", name, g.getKey(), g.getValue(), before));
                }
            }
        }

        Arena arena = Arena.ofShared();
        try {
            MemorySegment plan = amdgpu_plan.allocate(arena);
            amdgpu_plan.version(plan, amdgpu_restore_h.AMDGPU_PLAN_VERSION());
            amdgpu_plan.num_kfd(plan, kfds.size());
            MemorySegment kfdArray = amdgpu_plan_kfd.allocateArray(Math.max(1, kfds.size()), arena);
            amdgpu_plan.kfd(plan, kfdArray);
            int i = 0;
            for (var e : kfds.entrySet()) {
                fillKfd(arena, amdgpu_plan_kfd.asSlice(kfdArray, i++), e.getKey(), e.getValue(), mappings.get(e.getKey()), local);
            }
            amdgpu_plan.num_render(plan, renders.size());
            MemorySegment renderArray = amdgpu_plan_render.allocateArray(Math.max(1, renders.size()), arena);
            amdgpu_plan.render(plan, renderArray);
            i = 0;
            for (int id : renders) {
                int user = images.readRenderNode(id).getGpuId();
                Integer actual = userToLocal.get(user);
                if (actual == null) {
                    throw new CriuException(Errno.ENODEV, String.format("amdgpu-renderD-%d.img: GPU 0x%04x is in no"
                            + " KFD image", id, user));
                }
                MemorySegment r = amdgpu_plan_render.asSlice(renderArray, i++);
                amdgpu_plan_render.file_id(r, id);
                amdgpu_plan_render.user_gpu_id(r, user);
                amdgpu_plan_render.render_minor(r, renderMinor(local, actual));
            }
            return new RestorePlan(arena, plan, Map.copyOf(mappings), Map.copyOf(kfds), local);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
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
                }
            }
        } catch (IOException e) {
            throw new CriuException(Errno.EIO, "cannot list images directory " + dir + ": " + e.getMessage(), e);
        }
        renders.sort(null);
    }

    private static int renderMinor(Topology local, int actualGpuId) {
        return (int) local.gpu(actualGpuId).orElseThrow().get(NodeProperty.DRM_RENDER_MINOR);
    }

    private static void fillKfd(Arena arena, MemorySegment k, int id, CriuKfd kfd, GpuMapping m, Topology local) {
        List<KfdDeviceEntry> gpus = kfd.getDeviceEntriesList().stream().filter(e -> e.getCpuCoresCount() == 0).toList();
        MemorySegment gpuArray = amdgpu_plan_gpu.allocateArray(Math.max(1, gpus.size()), arena);
        for (int g = 0; g < gpus.size(); g++) {
            MemorySegment s = amdgpu_plan_gpu.asSlice(gpuArray, g);
            int user = gpus.get(g).getGpuId();
            int actual = m.localGpu(user);
            amdgpu_plan_gpu.user_gpu_id(s, user);
            amdgpu_plan_gpu.actual_gpu_id(s, actual);
            amdgpu_plan_gpu.render_minor(s, renderMinor(local, actual));
        }
        MemorySegment boArray = amdgpu_plan_bo.allocateArray(Math.max(1, kfd.getBoEntriesCount()), arena);
        for (int b = 0; b < kfd.getBoEntriesCount(); b++) {
            KfdBoEntry e = kfd.getBoEntries(b);
            MemorySegment s = amdgpu_plan_bo.asSlice(boArray, b);
            amdgpu_plan_bo.addr(s, e.getAddr());
            amdgpu_plan_bo.size(s, e.getSize());
            amdgpu_plan_bo.offset(s, e.getOffset());
            amdgpu_plan_bo.gpu_id(s, e.getGpuId());
            amdgpu_plan_bo.alloc_flags(s, e.getAllocFlags());
        }
        byte[] priv = kfd.getPrivData().toByteArray();
        MemorySegment privSeg = arena.allocate(Math.max(1, priv.length));
        MemorySegment.copy(priv, 0, privSeg, ValueLayout.JAVA_BYTE, 0, priv.length);
        amdgpu_plan_kfd.file_id(k, id);
        amdgpu_plan_kfd.vpid(k, kfd.getPid());
        amdgpu_plan_kfd.num_gpus(k, gpus.size());
        amdgpu_plan_kfd.num_bos(k, kfd.getBoEntriesCount());
        amdgpu_plan_kfd.num_objects(k, kfd.getNumOfObjects());
        amdgpu_plan_kfd.priv_size(k, priv.length);
        amdgpu_plan_kfd.gpus(k, gpuArray);
        amdgpu_plan_kfd.bos(k, boArray);
        amdgpu_plan_kfd.priv(k, privSeg);
    }
}

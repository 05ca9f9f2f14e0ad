package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.bindings.kfd_criu_bo_bucket;
import dev.criugpu.amdgpu.bindings.kfd_criu_device_bucket;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_criu_args;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_get_version_args;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.images.proto.KfdDeviceEntry;
import dev.criugpu.amdgpu.kfd.BoBucket;
import dev.criugpu.amdgpu.kfd.KfdFile;
import dev.criugpu.amdgpu.topology.GpuMapping;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.api.plan.PlanProgram;
import dev.criugpu.api.sys.Syscalls;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The amdgpu content of a restore plan, as upstream's restore does it in the restored task (facts §4.2): for a
 * KFD image, open {@code /dev/kfd}, check the ioctl API version, open the render node of every mapped GPU above
 * the task's image fds and put it into the device buckets, RESTORE, send the dma-bufs of the VRAM/GTT BOs to
 * criu's main process for the refill (on the image's {@link RefillChannels} socket, with the task's pid), and let the mappings of VRAM/GTT/doorbell/MMIO BOs move; for a render-node
 * image, a dup of the task's render fd of that GPU. Render nodes share one slot per minor within a task.
 */
final class KfdPrograms {
    private static final int MAPPED = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM() | kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_GTT()
            | kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP() | kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL();
    private static final int OPEN_FLAGS = Syscalls.O_RDWR | Syscalls.O_CLOEXEC;
    private static final String RENDER_PREFIX = "/dev/dri/renderD";

    private final ChildPlan plan;
    private final Arena arena;
    private final Topology local;
    private final Map<Integer, Integer> renderSlots = new LinkedHashMap<>();

    /** Adds to {@code plan}; claims the render-node and KFD paths for UPDATE_VMA_MAP. */
    KfdPrograms(ChildPlan plan, Topology local) {
        this.plan = plan;
        this.arena = plan.arena();
        this.local = local;
        plan.claimPath(RENDER_PREFIX, true, false);
        plan.claimPath(KfdFile.DEVICE, false, true); // criu reopens /dev/kfd by path: it binds to the same KFD process
    }

    private int renderSlot(int minor) {
        return renderSlots.computeIfAbsent(minor, m -> plan.newSlot());
    }

    private PlanProgram openRender(PlanProgram p, int minor) {
        return p.open(renderSlot(minor), RENDER_PREFIX + minor, OPEN_FLAGS, true);
    }

    void addKfd(int fileId, CriuKfd kfd, GpuMapping mapping, int refillChannel) {
        String image = "amdgpu-kfd-" + fileId + ".img";
        int kfdSlot = plan.newSlot();
        PlanProgram p = plan.program(fileId);
        p.open(kfdSlot, KfdFile.DEVICE, OPEN_FLAGS, false);
        MemorySegment version = kfd_ioctl_get_version_args.allocate(arena);
        p.ioctl(kfdSlot, kfd_ioctl_h.AMDKFD_IOC_GET_VERSION(), version, "KFD GET_VERSION");
        p.require(version, kfd_ioctl_get_version_args.major_version$offset(), KfdFile.REQUIRED_MAJOR,
                KfdFile.REQUIRED_MAJOR, "the KFD ioctl API's major version is not " + KfdFile.REQUIRED_MAJOR);
        p.require(version, kfd_ioctl_get_version_args.minor_version$offset(), KfdFile.MIN_MINOR, -1,
                "the KFD ioctl API is older than 1." + KfdFile.MIN_MINOR + ", the first with CRIU support; its minor is");

        List<KfdDeviceEntry> gpus = kfd.getDeviceEntriesList().stream().filter(e -> e.getCpuCoresCount() == 0).toList();
        MemorySegment devices = kfd_criu_device_bucket.allocateArray(Math.max(1, gpus.size()), arena);
        Map<Integer, Integer> minorOfUser = new LinkedHashMap<>();
        for (int g = 0; g < gpus.size(); g++) {
            int user = gpus.get(g).getGpuId();
            int actual = mapping.localGpu(user);
            int minor = RestorePlan.renderMinor(local, actual);
            minorOfUser.put(user, minor);
            MemorySegment d = kfd_criu_device_bucket.asSlice(devices, g);
            kfd_criu_device_bucket.user_gpu_id(d, user);
            kfd_criu_device_bucket.actual_gpu_id(d, actual);
            openRender(p, minor);
            p.putFd(renderSlot(minor), devices, g * kfd_criu_device_bucket.sizeof() + kfd_criu_device_bucket.drm_fd$offset(),
                    "bind renderD" + minor + " to GPU " + String.format("0x%04x", actual));
        }

        int n = kfd.getBoEntriesCount();
        MemorySegment bos = kfd_criu_bo_bucket.allocateArray(Math.max(1, n), arena);
        List<Integer> contents = new ArrayList<>();
        int firstVma = plan.mappingCount();
        for (int i = 0; i < n; i++) {
            KfdBoEntry e = kfd.getBoEntries(i);
            MemorySegment b = kfd_criu_bo_bucket.asSlice(bos, i);
            kfd_criu_bo_bucket.addr(b, e.getAddr());
            kfd_criu_bo_bucket.size(b, e.getSize());
            kfd_criu_bo_bucket.offset(b, e.getOffset());
            kfd_criu_bo_bucket.gpu_id(b, e.getGpuId());
            kfd_criu_bo_bucket.alloc_flags(b, e.getAllocFlags());
            kfd_criu_bo_bucket.dmabuf_fd(b, kfd_ioctl_h.KFD_INVALID_FD());
            if (BoBucket.hasContents(e.getAllocFlags())) contents.add(i);
            if ((e.getAllocFlags() & MAPPED) != 0) {
                plan.addMapping(e.getAddr(), e.getOffset(), b.asSlice(kfd_criu_bo_bucket.restored_offset$offset(), 8),
                        renderSlot(minorOfUser.get(e.getGpuId())));
            }
        }
        byte[] privBytes = kfd.getPrivData().toByteArray();
        MemorySegment priv = arena.allocate(Math.max(1, privBytes.length));
        MemorySegment.copy(privBytes, 0, priv, ValueLayout.JAVA_BYTE, 0, privBytes.length);

        MemorySegment args = kfd_ioctl_criu_args.allocate(arena);
        kfd_ioctl_criu_args.devices(args, devices.address());
        kfd_ioctl_criu_args.bos(args, bos.address());
        kfd_ioctl_criu_args.priv_data(args, priv.address());
        kfd_ioctl_criu_args.priv_data_size(args, privBytes.length);
        kfd_ioctl_criu_args.num_devices(args, gpus.size());
        kfd_ioctl_criu_args.num_bos(args, n);
        kfd_ioctl_criu_args.num_objects(args, kfd.getNumOfObjects());
        kfd_ioctl_criu_args.op(args, kfd_ioctl_h.KFD_CRIU_OP_RESTORE());
        p.ioctl(kfdSlot, kfd_ioctl_h.AMDKFD_IOC_CRIU_OP(), args, "KFD RESTORE of " + image);

        int[] indices = contents.stream().mapToInt(Integer::intValue).toArray();
        long[] fdOffsets = contents.stream().mapToLong(i -> i * kfd_criu_bo_bucket.sizeof()
                + kfd_criu_bo_bucket.dmabuf_fd$offset()).toArray();
        MemorySegment request = RefillProtocol.request(arena, fileId, indices);
        p.putPid(request, RefillProtocol.PID_AT);
        p.sendFds(refillChannel, request, bos, fdOffsets,
                "hand the " + indices.length + " dma-buf fds of " + image + " to criu for the BO contents");
        p.enableVmas(firstVma, plan.mappingCount() - firstVma);
        p.handOver(kfdSlot, "hand " + image + " to criu");
    }

    void addRender(int fileId, int minor) {
        PlanProgram p = plan.program(fileId);
        openRender(p, minor);
        p.handOverDup(renderSlot(minor), "hand amdgpu-renderD-" + fileId + ".img to criu");
    }
}

package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.images.proto.KfdDeviceEntry;
import dev.criugpu.amdgpu.kfd.BoBucket;
import dev.criugpu.amdgpu.sys.KfdFile;
import dev.criugpu.amdgpu.topology.GpuMapping;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.amdgpu.sys.KfdRestoreArgs;
import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.api.plan.PlanBuffer;
import dev.criugpu.api.plan.PlanProgram;
import dev.criugpu.api.sys.Syscalls;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The amdgpu content of a restore plan, as upstream's restore does it in the restored task (docs/DESIGN.md, AMD restore): for a
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
    private final KfdRestoreArgs args;
    private final Topology local;
    private final Map<Integer, Integer> renderSlots = new LinkedHashMap<>();

    /** Adds to {@code plan}; claims the render-node and KFD paths for UPDATE_VMA_MAP. */
    KfdPrograms(ChildPlan plan, Topology local) {
        this.plan = plan;
        this.args = new KfdRestoreArgs(plan);
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
        PlanBuffer version = args.version();
        p.ioctl(kfdSlot, kfd_ioctl_h.AMDKFD_IOC_GET_VERSION(), version, "KFD GET_VERSION");
        p.require(version, KfdRestoreArgs.VERSION_MAJOR_AT, KfdFile.REQUIRED_MAJOR,
                KfdFile.REQUIRED_MAJOR, "the KFD ioctl API's major version is not " + KfdFile.REQUIRED_MAJOR);
        p.require(version, KfdRestoreArgs.VERSION_MINOR_AT, KfdFile.MIN_MINOR, -1,
                "the KFD ioctl API is older than 1." + KfdFile.MIN_MINOR + ", the first with CRIU support; its minor is");

        List<KfdDeviceEntry> gpus = kfd.getDeviceEntriesList().stream().filter(e -> e.getCpuCoresCount() == 0).toList();
        List<KfdRestoreArgs.Device> buckets = new ArrayList<>();
        Map<Integer, Integer> minorOfUser = new LinkedHashMap<>();
        for (KfdDeviceEntry gpu : gpus) {
            int user = gpu.getGpuId();
            buckets.add(new KfdRestoreArgs.Device(user, mapping.localGpu(user)));
        }
        PlanBuffer devices = args.devices(buckets);
        for (int g = 0; g < buckets.size(); g++) {
            int actual = buckets.get(g).actualGpuId();
            int minor = RestorePlan.renderMinor(local, actual);
            minorOfUser.put(buckets.get(g).userGpuId(), minor);
            openRender(p, minor);
            p.putFd(renderSlot(minor), devices, KfdRestoreArgs.drmFdAt(g),
                    "bind renderD" + minor + " to GPU " + String.format("0x%04x", actual));
        }

        int n = kfd.getBoEntriesCount();
        List<KfdRestoreArgs.Bo> boList = new ArrayList<>(n);
        for (KfdBoEntry e : kfd.getBoEntriesList()) {
            boList.add(new KfdRestoreArgs.Bo(e.getAddr(), e.getSize(), e.getOffset(), e.getGpuId(), e.getAllocFlags()));
        }
        PlanBuffer bos = args.bos(boList);
        List<Integer> contents = new ArrayList<>();
        int firstVma = plan.mappingCount();
        for (int i = 0; i < n; i++) {
            KfdBoEntry e = kfd.getBoEntries(i);
            if (BoBucket.hasContents(e.getAllocFlags())) contents.add(i);
            if ((e.getAllocFlags() & MAPPED) != 0) {
                plan.addMapping(e.getAddr(), e.getOffset(), KfdRestoreArgs.restoredOffset(bos, i),
                        renderSlot(minorOfUser.get(e.getGpuId())));
            }
        }
        PlanBuffer restore = args.restore(devices, gpus.size(), bos, n, kfd.getPrivData().toByteArray(),
                kfd.getNumOfObjects());
        p.ioctl(kfdSlot, kfd_ioctl_h.AMDKFD_IOC_CRIU_OP(), restore, "KFD RESTORE of " + image);

        int[] indices = contents.stream().mapToInt(Integer::intValue).toArray();
        long[] fdOffsets = contents.stream().mapToLong(KfdRestoreArgs::dmabufFdAt).toArray();
        PlanBuffer request = plan.copyOf(RefillProtocol.request(fileId, indices));
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

package dev.criugpu.amdgpu.sys;

import dev.criugpu.amdgpu.bindings.kfd_criu_bo_bucket;
import dev.criugpu.amdgpu.bindings.kfd_criu_device_bucket;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_criu_args;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_get_version_args;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.api.plan.PlanBuffer;
import dev.criugpu.api.sys.PlanMemory;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The KFD ioctl arguments of a restore program, laid out in a {@link ChildPlan}'s memory (kfd_ioctl.h's structs):
 * the caller names buffers and the offsets a plan step reads or writes, never the layout.
 */
public final class KfdRestoreArgs {
    /** A GPU of the image ({@code user}) and the local GPU it restores onto ({@code actual}). */
    public record Device(int userGpuId, int actualGpuId) {
    }

    /** A BO of the image, as KFD's RESTORE takes it. */
    public record Bo(long addr, long size, long offset, int gpuId, int allocFlags) {
    }

    public static final long VERSION_MAJOR_AT = kfd_ioctl_get_version_args.major_version$offset();
    public static final long VERSION_MINOR_AT = kfd_ioctl_get_version_args.minor_version$offset();

    private final ChildPlan plan;

    public KfdRestoreArgs(ChildPlan plan) {
        this.plan = plan;
    }

    /** For GET_VERSION. */
    public PlanBuffer version() {
        return plan.allocate(kfd_ioctl_get_version_args.sizeof());
    }

    /** The device buckets, their render fds left for PUT_FD steps at {@link #drmFdAt}. */
    public PlanBuffer devices(List<Device> gpus) {
        PlanBuffer buf = plan.allocate(kfd_criu_device_bucket.sizeof() * gpus.size());
        MemorySegment all = PlanMemory.segment(buf);
        for (int g = 0; g < gpus.size(); g++) {
            MemorySegment d = kfd_criu_device_bucket.asSlice(all, g);
            kfd_criu_device_bucket.user_gpu_id(d, gpus.get(g).userGpuId());
            kfd_criu_device_bucket.actual_gpu_id(d, gpus.get(g).actualGpuId());
        }
        return buf;
    }

    public static long drmFdAt(int device) {
        return device * kfd_criu_device_bucket.sizeof() + kfd_criu_device_bucket.drm_fd$offset();
    }

    /** The BO buckets, no dma-buf fd yet (KFD fills them in at {@link #dmabufFdAt}). */
    public PlanBuffer bos(List<Bo> bos) {
        PlanBuffer buf = plan.allocate(kfd_criu_bo_bucket.sizeof() * bos.size());
        MemorySegment all = PlanMemory.segment(buf);
        for (int i = 0; i < bos.size(); i++) {
            Bo e = bos.get(i);
            MemorySegment b = kfd_criu_bo_bucket.asSlice(all, i);
            kfd_criu_bo_bucket.addr(b, e.addr());
            kfd_criu_bo_bucket.size(b, e.size());
            kfd_criu_bo_bucket.offset(b, e.offset());
            kfd_criu_bo_bucket.gpu_id(b, e.gpuId());
            kfd_criu_bo_bucket.alloc_flags(b, e.allocFlags());
            kfd_criu_bo_bucket.dmabuf_fd(b, kfd_ioctl_h.KFD_INVALID_FD());
        }
        return buf;
    }

    public static long dmabufFdAt(int bo) {
        return bo * kfd_criu_bo_bucket.sizeof() + kfd_criu_bo_bucket.dmabuf_fd$offset();
    }

    /** The 8 bytes where KFD leaves the new mmap offset of BO {@code bo}. */
    public static PlanBuffer restoredOffset(PlanBuffer bos, int bo) {
        return bos.slice(bo * kfd_criu_bo_bucket.sizeof() + kfd_criu_bo_bucket.restored_offset$offset(), 8);
    }

    /** The CRIU_OP RESTORE arguments over {@code devices} and {@code bos} and a copy of {@code privData}. */
    public PlanBuffer restore(PlanBuffer devices, int numDevices, PlanBuffer bos, int numBos, byte[] privData,
                              int numObjects) {
        PlanBuffer priv = plan.copyOf(privData);
        PlanBuffer args = plan.allocate(kfd_ioctl_criu_args.sizeof());
        MemorySegment a = PlanMemory.segment(args);
        kfd_ioctl_criu_args.devices(a, PlanMemory.segment(devices).address());
        kfd_ioctl_criu_args.bos(a, PlanMemory.segment(bos).address());
        kfd_ioctl_criu_args.priv_data(a, PlanMemory.segment(priv).address());
        kfd_ioctl_criu_args.priv_data_size(a, privData.length);
        kfd_ioctl_criu_args.num_devices(a, numDevices);
        kfd_ioctl_criu_args.num_bos(a, numBos);
        kfd_ioctl_criu_args.num_objects(a, numObjects);
        kfd_ioctl_criu_args.op(a, kfd_ioctl_h.KFD_CRIU_OP_RESTORE());
        return args;
    }
}

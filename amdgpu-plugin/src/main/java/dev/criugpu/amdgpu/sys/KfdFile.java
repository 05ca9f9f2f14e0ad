package dev.criugpu.amdgpu.sys;

import dev.criugpu.amdgpu.bindings.kfd_criu_bo_bucket;
import dev.criugpu.amdgpu.bindings.kfd_criu_device_bucket;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_criu_args;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_get_version_args;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.kfd.BoBucket;
import dev.criugpu.amdgpu.kfd.DeviceBucket;
import dev.criugpu.amdgpu.kfd.KfdCheckpoint;
import dev.criugpu.amdgpu.kfd.ProcessInfo;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.Syscalls;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * The KFD ioctls on one {@code /dev/kfd} fd, through the syscall seam. Dump-side calls (PROCESS_INFO,
 * CHECKPOINT, UNPAUSE) must run on the thread that ptrace-seized the fd's owner (criu's hook thread); the
 * kernel refuses them from any other thread.
 */
public final class KfdFile {
    /** Upstream retries KFD ioctls this often on EINTR/EAGAIN. */
    static final int RETRIES = 200;
    public static final int REQUIRED_MAJOR = 1;
    /** 1.7 added the CRIU API, 1.8 SDMA transfers with GTT BOs. */
    public static final int MIN_MINOR = 8;
    public static final String DEVICE = "/dev/kfd";

    private final Syscalls sys;
    private final int fd;

    public KfdFile(Syscalls sys, int fd) {
        this.sys = sys;
        this.fd = fd;
    }

    public int fd() {
        return fd;
    }

    /** {@code major << 16 | minor} from AMDKFD_IOC_GET_VERSION. */
    public int version() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = kfd_ioctl_get_version_args.allocate(a);
            sys.ioctl(fd, kfd_ioctl_h.AMDKFD_IOC_GET_VERSION(), v, RETRIES, "KFD GET_VERSION on fd " + fd);
            return kfd_ioctl_get_version_args.major_version(v) << 16 | kfd_ioctl_get_version_args.minor_version(v);
        }
    }

    /** Whether the KFD ioctl API {@code major << 16 | minor} has CRIU support (1.x with x ≥ 8). */
    public static boolean supportsCriu(int version) {
        return version >>> 16 == REQUIRED_MAJOR && (version & 0xFFFF) >= MIN_MINOR;
    }

    /** "KFD ioctl API 1.7 lacks CRIU support (need 1.8 or newer)", or just the version when it has it. */
    public static String describe(int version) {
        String v = "KFD ioctl API " + (version >>> 16) + "." + (version & 0xFFFF);
        return supportsCriu(version) ? v : v + " lacks CRIU support (need " + REQUIRED_MAJOR + "." + MIN_MINOR + " or newer)";
    }

    /** Fails unless the KFD ioctl API is 1.x with x ≥ 8. */
    public void requireCriuSupport() {
        int v = version();
        if (!supportsCriu(v)) throw new CriuException(Errno.ENOTSUP, describe(v));
    }

    /** PROCESS_INFO: pauses the owner's queues and reports the sizes CHECKPOINT needs. */
    public ProcessInfo processInfo() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment args = criuArgs(a, kfd_ioctl_h.KFD_CRIU_OP_PROCESS_INFO());
            criuOp(args, "PROCESS_INFO");
            return new ProcessInfo(kfd_ioctl_criu_args.pid(args), kfd_ioctl_criu_args.num_devices(args),
                    kfd_ioctl_criu_args.num_bos(args), kfd_ioctl_criu_args.num_objects(args),
                    kfd_ioctl_criu_args.priv_data_size(args));
        }
    }

    /** CHECKPOINT with the counts from {@code info}; the returned dma-buf fds are open in this process. */
    public KfdCheckpoint checkpoint(ProcessInfo info) {
        if (info.privDataSize() < 0 || info.privDataSize() > Integer.MAX_VALUE - 8) {
            throw new CriuException(Errno.EINVAL, "KFD fd " + fd + ": private data of " + info.privDataSize() + " bytes is too large");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment args = criuArgs(a, kfd_ioctl_h.KFD_CRIU_OP_CHECKPOINT());
            MemorySegment devices = kfd_criu_device_bucket.allocateArray(Math.max(1, info.numDevices()), a);
            MemorySegment bos = kfd_criu_bo_bucket.allocateArray(Math.max(1, info.numBos()), a);
            MemorySegment priv = a.allocate(Math.max(1, info.privDataSize()));
            kfd_ioctl_criu_args.devices(args, devices.address());
            kfd_ioctl_criu_args.bos(args, bos.address());
            kfd_ioctl_criu_args.priv_data(args, priv.address());
            kfd_ioctl_criu_args.priv_data_size(args, info.privDataSize());
            kfd_ioctl_criu_args.num_devices(args, info.numDevices());
            kfd_ioctl_criu_args.num_bos(args, info.numBos());
            kfd_ioctl_criu_args.num_objects(args, info.numObjects());
            criuOp(args, "CHECKPOINT");
            List<DeviceBucket> devs = new ArrayList<>();
            for (int i = 0; i < info.numDevices(); i++) {
                MemorySegment d = kfd_criu_device_bucket.asSlice(devices, i);
                devs.add(new DeviceBucket(kfd_criu_device_bucket.user_gpu_id(d), kfd_criu_device_bucket.actual_gpu_id(d),
                        kfd_criu_device_bucket.drm_fd(d)));
            }
            List<BoBucket> bol = new ArrayList<>();
            for (int i = 0; i < info.numBos(); i++) bol.add(readBo(kfd_criu_bo_bucket.asSlice(bos, i)));
            byte[] privData = priv.asSlice(0, info.privDataSize()).toArray(ValueLayout.JAVA_BYTE);
            return new KfdCheckpoint(devs, bol, privData);
        }
    }

    /** UNPAUSE: restarts the owner's queues after a checkpoint. */
    public void unpause() {
        try (Arena a = Arena.ofConfined()) {
            criuOp(criuArgs(a, kfd_ioctl_h.KFD_CRIU_OP_UNPAUSE()), "UNPAUSE");
        }
    }

    /**
     * RESTORE into the calling process's KFD process (this fd must have been opened by the caller). Returns the
     * BOs with their new mmap offsets and dma-buf fds.
     */
    public List<BoBucket> restore(List<DeviceBucket> devices, List<BoBucket> bos, int numObjects, byte[] privData) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment args = criuArgs(a, kfd_ioctl_h.KFD_CRIU_OP_RESTORE());
            MemorySegment devs = kfd_criu_device_bucket.allocateArray(Math.max(1, devices.size()), a);
            for (int i = 0; i < devices.size(); i++) {
                MemorySegment d = kfd_criu_device_bucket.asSlice(devs, i);
                kfd_criu_device_bucket.user_gpu_id(d, devices.get(i).userGpuId());
                kfd_criu_device_bucket.actual_gpu_id(d, devices.get(i).actualGpuId());
                kfd_criu_device_bucket.drm_fd(d, devices.get(i).drmFd());
            }
            MemorySegment bo = kfd_criu_bo_bucket.allocateArray(Math.max(1, bos.size()), a);
            for (int i = 0; i < bos.size(); i++) {
                MemorySegment b = kfd_criu_bo_bucket.asSlice(bo, i);
                BoBucket x = bos.get(i);
                kfd_criu_bo_bucket.addr(b, x.addr());
                kfd_criu_bo_bucket.size(b, x.size());
                kfd_criu_bo_bucket.offset(b, x.offset());
                kfd_criu_bo_bucket.gpu_id(b, x.gpuId());
                kfd_criu_bo_bucket.alloc_flags(b, x.allocFlags());
                kfd_criu_bo_bucket.dmabuf_fd(b, kfd_ioctl_h.KFD_INVALID_FD());
            }
            MemorySegment priv = a.allocate(Math.max(1, privData.length));
            MemorySegment.copy(privData, 0, priv, ValueLayout.JAVA_BYTE, 0, privData.length);
            kfd_ioctl_criu_args.devices(args, devs.address());
            kfd_ioctl_criu_args.bos(args, bo.address());
            kfd_ioctl_criu_args.priv_data(args, priv.address());
            kfd_ioctl_criu_args.priv_data_size(args, privData.length);
            kfd_ioctl_criu_args.num_devices(args, devices.size());
            kfd_ioctl_criu_args.num_bos(args, bos.size());
            kfd_ioctl_criu_args.num_objects(args, numObjects);
            criuOp(args, "RESTORE");
            List<BoBucket> out = new ArrayList<>();
            for (int i = 0; i < bos.size(); i++) out.add(readBo(kfd_criu_bo_bucket.asSlice(bo, i)));
            return out;
        }
    }

    /** RESUME of the restored process {@code pid} (criu's real pid), on a KFD fd opened by the caller. */
    public void resume(int pid) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment args = criuArgs(a, kfd_ioctl_h.KFD_CRIU_OP_RESUME());
            kfd_ioctl_criu_args.pid(args, pid);
            criuOp(args, "RESUME of pid " + pid);
        }
    }

    private static BoBucket readBo(MemorySegment b) {
        return new BoBucket(kfd_criu_bo_bucket.addr(b), kfd_criu_bo_bucket.size(b), kfd_criu_bo_bucket.offset(b),
                kfd_criu_bo_bucket.restored_offset(b), kfd_criu_bo_bucket.gpu_id(b), kfd_criu_bo_bucket.alloc_flags(b),
                kfd_criu_bo_bucket.dmabuf_fd(b));
    }

    private static MemorySegment criuArgs(Arena a, int op) {
        MemorySegment args = kfd_ioctl_criu_args.allocate(a);
        kfd_ioctl_criu_args.op(args, op);
        return args;
    }

    private void criuOp(MemorySegment args, String op) {
        sys.ioctl(fd, kfd_ioctl_h.AMDKFD_IOC_CRIU_OP(), args, RETRIES, "KFD CRIU " + op + " on fd " + fd);
    }
}

package dev.criugpu.amdgpu.sdma;

import dev.criugpu.amdgpu.bindings.amdgpu_gpu_info;
import dev.criugpu.amdgpu.bindings.amdgpu_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/** A libdrm_amdgpu device handle on a render-node fd the caller keeps open, with the GPU family it reports. */
public final class AmdgpuDevice implements AutoCloseable {
    private final MemorySegment handle;
    private final int familyId;

    private AmdgpuDevice(MemorySegment handle, int familyId) {
        this.handle = handle;
        this.familyId = familyId;
    }

    /** amdgpu_device_initialize + amdgpu_query_gpu_info on {@code renderFd}. */
    public static AmdgpuDevice open(int renderFd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment major = a.allocate(JAVA_INT);
            MemorySegment minor = a.allocate(JAVA_INT);
            MemorySegment dev = a.allocate(ADDRESS);
            DrmResult.check(amdgpu_h.amdgpu_device_initialize(renderFd, major, minor, dev), "amdgpu_device_initialize");
            MemorySegment handle = dev.get(ADDRESS, 0);
            MemorySegment info = amdgpu_gpu_info.allocate(a);
            info.fill((byte) 0);
            int rc = amdgpu_h.amdgpu_query_gpu_info(handle, info);
            if (rc != 0) {
                amdgpu_h.amdgpu_device_deinitialize(handle);
                DrmResult.check(rc, "amdgpu_query_gpu_info");
            }
            return new AmdgpuDevice(handle, amdgpu_gpu_info.family_id(info));
        }
    }

    public MemorySegment handle() {
        return handle;
    }

    public int familyId() {
        return familyId;
    }

    @Override
    public void close() {
        DrmResult.check(amdgpu_h.amdgpu_device_deinitialize(handle), "amdgpu_device_deinitialize");
    }
}

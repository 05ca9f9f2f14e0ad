package dev.criugpu.amdgpu.bindings;

/** Constants of the restore executor's header ({@code src/main/c/amdgpu_restore.h}). */
public final class amdgpu_restore_h {
    private amdgpu_restore_h() {
    }

    public static int AMDGPU_PLAN_VERSION() { return 2; }

    public static int AMDGPU_REFILL_MAGIC() { return 0x31465241; }

    public static int AMDGPU_REFILL_FDS_PER_MSG() { return 64; }
}

package dev.criugpu.amdgpu.bindings;

/** Constants of the restore executor's header ({@code src/main/c/amdgpu_restore.h}). */
public final class amdgpu_restore_h {
    private amdgpu_restore_h() {
    }

    public static int AMDGPU_PLAN_VERSION() { return 1; }
}

package dev.criugpu.api.bindings;

/** Constants of the restore-plan executor's header ({@code native/plan/gpu_plan.h}). */
public final class gpu_plan_h {
    private gpu_plan_h() {
    }

    public static int GPU_PLAN_VERSION() { return 6; }

    public static int GPU_PLAN_FDS_PER_MSG() { return 64; }

    public static int GPU_PLAN_NO_FD() { return 0xffffffff; }

    public static int GPU_PLAN_OPEN() { return 1; }

    public static int GPU_PLAN_IOCTL() { return 2; }

    public static int GPU_PLAN_REQUIRE() { return 3; }

    public static int GPU_PLAN_PUT_FD() { return 4; }

    public static int GPU_PLAN_SEND_FDS() { return 5; }

    public static int GPU_PLAN_ENABLE_VMAS() { return 6; }

    public static int GPU_PLAN_RETURN() { return 7; }

    public static int GPU_PLAN_RETURN_DUP() { return 8; }

    public static int GPU_PLAN_PUT_PID() { return 9; }
}

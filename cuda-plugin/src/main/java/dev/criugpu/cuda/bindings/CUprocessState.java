package dev.criugpu.cuda.bindings;

/** {@code enum CUprocessState_enum} from cuda.h (CUDA 12.8+). */
public final class CUprocessState {
    public static final int CU_PROCESS_STATE_RUNNING = 0;
    public static final int CU_PROCESS_STATE_LOCKED = 1;
    public static final int CU_PROCESS_STATE_CHECKPOINTED = 2;
    public static final int CU_PROCESS_STATE_FAILED = 3;

    private CUprocessState() {
    }
}

package dev.criugpu.cuda.state;

import dev.criugpu.cuda.bindings.CUprocessState;

import java.util.Locale;
import java.util.Optional;

/** A process's CUDA checkpoint state (CUprocessState), with the words cuda-checkpoint prints for it. */
public enum CudaState {
    RUNNING(CUprocessState.CU_PROCESS_STATE_RUNNING),
    LOCKED(CUprocessState.CU_PROCESS_STATE_LOCKED),
    CHECKPOINTED(CUprocessState.CU_PROCESS_STATE_CHECKPOINTED),
    FAILED(CUprocessState.CU_PROCESS_STATE_FAILED);

    public final int value;

    CudaState(int value) {
        this.value = value;
    }

    /** The word cuda-checkpoint --get-state prints: running, locked, checkpointed, failed. */
    public String word() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static Optional<CudaState> ofValue(int value) {
        for (CudaState s : values()) {
            if (s.value == value) return Optional.of(s);
        }
        return Optional.empty();
    }

    public static Optional<CudaState> ofWord(String word) {
        for (CudaState s : values()) {
            if (s.word().equals(word.trim())) return Optional.of(s);
        }
        return Optional.empty();
    }
}

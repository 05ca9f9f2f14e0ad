package dev.criugpu.cuda.state;

import java.util.ArrayList;
import java.util.List;

/**
 * The state bookkeeping as pure functions: RUNNING -lock-> LOCKED -checkpoint-> CHECKPOINTED -restore-> LOCKED
 * -unlock-> RUNNING.
 */
public final class Transitions {
    private Transitions() {
    }

    /**
     * The actions that bring a process from {@code current} back to {@code target} along the cycle, going forward
     * only through restore and unlock (we never lock or checkpoint to get back). Empty when already there.
     *
     * @throws IllegalStateException when {@code current} is FAILED or {@code target} cannot be reached that way
     */
    public static List<CudaAction> returnSteps(CudaState target, CudaState current) {
        if (current == CudaState.FAILED || target == CudaState.FAILED) {
            throw new IllegalStateException("a process in the FAILED state cannot be brought back");
        }
        List<CudaAction> steps = new ArrayList<>();
        CudaState at = current;
        while (at != target) {
            switch (at) {
                case CHECKPOINTED -> {
                    steps.add(CudaAction.RESTORE);
                    at = CudaState.LOCKED;
                }
                case LOCKED -> {
                    steps.add(CudaAction.UNLOCK);
                    at = CudaState.RUNNING;
                }
                default -> throw new IllegalStateException(
                        "cannot go from " + current.word() + " back to " + target.word() + " by restore/unlock");
            }
        }
        return steps;
    }

    /** Whether the dump has to lock a process it finds in {@code initial} (only running ones). */
    public static boolean needsLock(CudaState initial) {
        return initial == CudaState.RUNNING;
    }

    /** Whether the dump has to checkpoint a process it found in {@code initial} (the user had not already). */
    public static boolean needsCheckpoint(CudaState initial) {
        return initial == CudaState.RUNNING || initial == CudaState.LOCKED;
    }
}

package dev.criugpu.cuda.state;

import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.gpu.GpuPair;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Bringing a task back to its CUDA state before the dump, by the driver's word rather than by what was believed:
 * ask its state, take {@link Transitions#returnSteps} from there, ask again. A driver call that another process
 * started (a dead criu's or a dead agent's) may still be running — the driver refuses other calls meanwhile — and
 * may land after the task was back, so a failed call is retried and a task that is back is watched for a settle time
 * and brought back again if it moved. Used by criu's exit hook and by the agent once criu is gone.
 */
public final class TaskReturn {
    /** Between two attempts while the driver is busy with a call someone else started. */
    public static final long RETRY_MS = 200;

    private TaskReturn() {
    }

    /** How a return ended. */
    public enum End { BACK, EXITED, IMPOSSIBLE, GAVE_UP }

    /**
     * The end, the steps taken ({@link CudaAction#word}s), the state last seen (null: never known) and the last error
     * (the reason when not back).
     */
    public record Outcome(End end, List<String> steps, CudaState last, String error) {
        public boolean back() {
            return end == End.BACK || end == End.EXITED;
        }
    }

    /** What a caller logs along the way. */
    public interface Listener {
        /** The task is in its state before the dump, first reached {@code ms} after the start. */
        default void back(CudaState first, List<String> steps, long ms) {
        }

        /** A call someone else had started landed and moved the task again; it is back via {@code steps}. */
        default void movedAgain(List<String> steps) {
        }
    }

    /** The actions themselves, in order (restore onto {@code pairs}; empty pairs: the same GPUs). */
    public static void apply(CudaBackend backend, int pid, List<CudaAction> steps, List<GpuPair> pairs)
            throws CudaCallException {
        for (CudaAction a : steps) {
            switch (a) {
                case RESTORE -> {
                    backend.prepareRestore();
                    backend.restore(pid, pairs);
                }
                case UNLOCK -> backend.unlock(pid);
                default -> throw new IllegalArgumentException(a.word + " does not bring a task back");
            }
        }
    }

    /**
     * Brings {@code pid} back to {@code initial}, trying again until {@code giveUpMs}, then keeps it there for
     * {@code settleMs} (0: done as soon as it is back).
     *
     * @param alive whether the task is still the process it was (a task that exited needs nothing)
     */
    public static Outcome run(CudaBackend backend, int pid, CudaState initial, BooleanSupplier alive, long giveUpMs,
                              long settleMs, Listener listener) {
        long start = System.nanoTime();
        long giveUp = start + giveUpMs * 1_000_000;
        long backSince = -1;
        CudaState first = null;
        CudaState last = null;
        List<String> steps = new ArrayList<>();
        int stepsWhenBack = -1;
        String lastError = null;
        while (true) {
            if (!alive.getAsBoolean()) return new Outcome(End.EXITED, steps, null, null);
            try {
                CudaState now = backend.state(pid);
                last = now;
                if (first == null) first = now;
                if (now == initial) {
                    if (backSince < 0) backSince = System.nanoTime();
                    if (stepsWhenBack < 0) {
                        listener.back(first, List.copyOf(steps), (backSince - start) / 1_000_000);
                    } else if (steps.size() > stepsWhenBack) {
                        listener.movedAgain(List.copyOf(steps.subList(stepsWhenBack, steps.size())));
                    }
                    stepsWhenBack = steps.size();
                    if ((System.nanoTime() - backSince) / 1_000_000 >= settleMs) return new Outcome(End.BACK, steps, now, null);
                } else {
                    backSince = -1;
                    for (CudaAction a : Transitions.returnSteps(initial, now)) {
                        apply(backend, pid, List.of(a), List.of());
                        steps.add(a.word);
                    }
                    continue;
                }
            } catch (CudaCallException e) {
                lastError = e.getMessage(); // a driver call someone else started may still be running: try again
            } catch (IllegalStateException e) {
                return new Outcome(End.IMPOSSIBLE, steps, last, e.getMessage());
            }
            if (System.nanoTime() >= giveUp && backSince < 0) return new Outcome(End.GAVE_UP, steps, last, lastError);
            pause(RETRY_MS);
        }
    }

    /** A task that did not come back, as it is: the same steps by hand, through {@code criu-gpu cuda}. */
    public static String byHand(int pid, CudaState initial, CudaState last) {
        List<CudaAction> steps;
        try {
            steps = last == null ? null : Transitions.returnSteps(initial, last);
        } catch (IllegalStateException e) {
            steps = null;
        }
        if (steps == null) return "`criu-gpu cuda --get-state --pid " + pid + "` and the matching --action";
        if (steps.equals(List.of(CudaAction.RESTORE, CudaAction.UNLOCK))) return "`criu-gpu cuda --toggle --pid " + pid + "`";
        return String.join(" then ", steps.stream().map(a -> "`criu-gpu cuda --action " + a.word + " --pid " + pid + "`").toList());
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

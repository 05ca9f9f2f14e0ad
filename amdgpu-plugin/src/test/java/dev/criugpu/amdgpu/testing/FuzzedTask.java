package dev.criugpu.amdgpu.testing;

import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.api.plan.PlanMutations.Range;
import dev.criugpu.api.sys.PlanCalls;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A restore plan, possibly with mutated numbers ({@link dev.criugpu.api.plan.PlanMutations}), run by the shim's
 * executor in a forked task over the simulated KFD (src/test/c/plan_fuzz.c): what each program returned and logged,
 * how many watched bytes changed outside the allowed ranges, or that the task crashed or hung. Whatever the
 * executor does there (fds it closes, memory it writes) stays in that task.
 */
public final class FuzzedTask {
    /**
     * The seam the task's executor calls: the simulated KFD and criu stand-ins, with an open that reaches only the
     * simulated devices and /dev/null and an ioctl that passes only KFD's requests, so that a mutated step reaches
     * no real file or driver.
     */
    public static final PlanCalls CALLS = new PlanCalls(KfdSimulator.symbol("kfdsim_fuzz_open"),
            KfdSimulator.symbol("kfdsim_close"), KfdSimulator.symbol("kfdsim_fuzz_ioctl"),
            KfdSimulator.symbol("kfdsim_find_unused_fd"), KfdSimulator.symbol("kfdsim_log"),
            KfdSimulator.symbol("kfdsim_fdstore_get"));
    private static final int MAX_IDS = 16;
    private static final int LOG_BYTES = 256;
    /** struct fuzz_result of plan_fuzz.c */
    private static final long RC_AT = 0, LINES_AT = 4 * MAX_IDS, LOG_AT = 8 * MAX_IDS,
            STRAY_AT = LOG_AT + (long) LOG_BYTES * MAX_IDS, FIRST_STRAY_AT = STRAY_AT + 8,
            SIZE = FIRST_STRAY_AT + 16;
    private static final MethodHandle RUN = Linker.nativeLinker().downcallHandle(KfdSimulator.symbol("kfdsim_fuzz_child"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT,
                    JAVA_INT, JAVA_INT, ADDRESS));
    private static final int TIMEOUT_MS = 10_000;

    /**
     * How the task ended ({@code 0} normally, {@code -1} hung and killed, a signal number, 1000 + an early exit
     * status), and, when it ended normally, per program its result, the lines it logged and the last of them.
     */
    public record Outcome(int status, int[] rc, int[] lines, String[] log, long stray, long firstStray) {
    }

    private final MemorySegment restore;
    private final MemorySegment context;

    /** {@code plan} (sealed here) run with {@link #CALLS}. */
    public FuzzedTask(ChildPlan plan) {
        SimulatedExecutor e = SimulatedExecutor.load(plan, CALLS);
        this.restore = e.restoreExtFile();
        this.context = e.context();
    }

    /**
     * Runs RESTORE_EXT_FILE for each of {@code ids} in one forked task; counts the bytes of {@code watched} that
     * changed outside {@code allowed}; then receives and closes what the task sent on {@code drainFd} (-1: none).
     */
    public Outcome run(int[] ids, List<Range> watched, List<Range> allowed, int drainFd) {
        if (ids.length > MAX_IDS) throw new IllegalArgumentException("at most " + MAX_IDS + " programs");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(SIZE, 8);
            int status = (int) RUN.invokeExact(restore, context, a.allocateFrom(JAVA_INT, ids), ids.length,
                    ranges(a, watched), watched.size(), ranges(a, allowed), allowed.size(), drainFd, TIMEOUT_MS, out);
            int[] rc = new int[ids.length];
            int[] lines = new int[ids.length];
            String[] log = new String[ids.length];
            for (int i = 0; i < ids.length; i++) {
                rc[i] = out.get(JAVA_INT, RC_AT + 4L * i);
                lines[i] = out.get(JAVA_INT, LINES_AT + 4L * i);
                log[i] = out.asSlice(LOG_AT + (long) LOG_BYTES * i, LOG_BYTES).getString(0);
            }
            return new Outcome(status, rc, lines, log, out.get(JAVA_LONG, STRAY_AT), out.get(JAVA_LONG, FIRST_STRAY_AT));
        } catch (Throwable t) {
            throw new IllegalStateException("kfdsim_fuzz_child", t);
        }
    }

    private static MemorySegment ranges(Arena a, List<Range> rs) {
        MemorySegment m = a.allocate(16L * Math.max(1, rs.size()), 8);
        for (int i = 0; i < rs.size(); i++) {
            m.set(JAVA_LONG, 16L * i, rs.get(i).addr());
            m.set(JAVA_LONG, 16L * i + 8, rs.get(i).len());
        }
        return m;
    }
}

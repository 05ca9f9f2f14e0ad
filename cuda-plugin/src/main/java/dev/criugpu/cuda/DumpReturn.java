package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.cuda.agent.AgentLink;
import dev.criugpu.cuda.agent.WatchedTask;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.DumpEnding;
import dev.criugpu.cuda.state.TaskReturn;
import dev.criugpu.cuda.state.Transitions;
import dev.criugpu.api.sys.ProcStat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

/**
 * The return at criu's exit: every task the dump touched goes back to its state before the dump when the tree goes
 * on, or is left to the CUDA agent when criu will kill it. A task counts as returned only when the driver says it is
 * back; the others stay on the agent's watch list, which tries again once criu is gone.
 */
final class DumpReturn {
    private static final Logger log = LoggerFactory.getLogger(DumpReturn.class);
    /** How long criu's exit keeps trying to return a task through its own backend after the agent died. */
    static final long FALLBACK_GIVE_UP_MS = 60_000;

    private final CudaDeps deps;
    private final WokenWork work;
    private final int lockTimeoutMs;
    private CudaBackend fallback;
    /** {@link #FALLBACK_GIVE_UP_MS}; shorter in tests of a driver that keeps refusing. */
    long fallbackGiveUpMs = FALLBACK_GIVE_UP_MS;

    DumpReturn(CudaDeps deps, WokenWork work, int lockTimeoutMs) {
        this.deps = deps;
        this.work = work;
        this.lockTimeoutMs = lockTimeoutMs;
    }

    private AgentLink agent() {
        return deps.agent();
    }

    /**
     * {@code ret} 0 = success; {@code treeSurvives} from criu's options. True when a task criu leaves alive could not
     * be returned although the dump succeeded (one error line per task says what to run by hand).
     */
    boolean run(Collection<CudaTask> tasks, boolean watched, int ret, boolean treeSurvives) {
        boolean stranded = false;
        try {
            List<CudaTask> touched = tasks.stream().filter(CudaTask::touched).toList();
            switch (DumpEnding.decide(ret, !touched.isEmpty(), treeSurvives)) {
                case NOTHING -> { }
                case AGENT_WATCHES -> {
                    if (agent().gone()) watchAgain(touched);
                }
                case RESTORE_NOW -> {
                    List<String> left = returnNow(touched, ret != 0 ? "the dump failed" : "criu leaves the tree alive");
                    left.forEach(log::error);
                    stranded = !left.isEmpty() && ret == 0;
                }
            }
            if (watched) tellAgentReturned(tasks);
        } finally {
            try {
                agent().done();
            } catch (IOException e) {
                if (watched && !agent().gone()) {
                    log.error("{}: if criu resumes the tree instead of killing it, return its CUDA tasks with "
                            + "`criu-gpu cuda --toggle --pid PID`", e.getMessage());
                }
            }
        }
        return stranded;
    }

    /**
     * The agent died and criu will kill the tree — unless a failing post-dump script or an RPC client makes it resume
     * it, or criu dies first: a second agent, started now, watches the touched tasks until criu is gone.
     */
    private void watchAgain(List<CudaTask> touched) {
        try {
            AgentLink second = deps.secondAgent().get();
            for (CudaTask t : touched) second.watch(new WatchedTask(t.pid, t.startTime, t.initial));
            second.done();
            log.warn("the CUDA agent died during the dump; a second one watches pid(s) {} until criu is gone, in case criu "
                    + "leaves them alive", touched.stream().map(t -> t.pid).toList());
        } catch (IOException | RuntimeException e) {
            log.warn("the CUDA agent died during the dump and no second one could be started ({}): criu kills the tree now; "
                    + "if it resumes it instead, return its CUDA tasks with {}", e.getMessage(),
                    touched.stream().map(t -> TaskReturn.byHand(t.pid, t.initial, t.uncertain ? null : t.current)).toList());
        }
    }

    /** Every task back in its state before the dump (the driver's word) needs nothing more from the agent. */
    private void tellAgentReturned(Collection<CudaTask> tasks) {
        if (agent().gone()) return;
        for (CudaTask t : tasks) {
            if (t.touched() || !Transitions.needsCheckpoint(t.initial)) continue;
            try {
                agent().returned(t.pid);
            } catch (IOException e) {
                log.warn("{}", e.getMessage());
                return;
            }
        }
    }

    /**
     * Returns every touched task to its state before the dump, each on a worker with its restore thread awake. A task
     * the agent cannot return because it died — before or during this — goes back through criu's own backend, by the
     * driver's word on its state and kept there for longer than a call the agent left under way could take to land.
     * The lines for the tasks that did not come back are returned.
     */
    private List<String> returnNow(List<CudaTask> touched, String why) {
        log.info("{}: returning {} CUDA task(s) to their state before the dump", why, touched.size());
        Map<Integer, TaskReturn.Outcome> outcomes = new ConcurrentHashMap<>();
        for (CudaTask t : touched) {
            try {
                work.wake(t.pid, t.restoreTid);
            } catch (CriuException e) {
                log.debug("pid {}: restore thread not woken ({}); the task is not held by criu", t.pid, e.getMessage());
            }
            work.submit(t.pid, () -> outcomes.put(t.pid, returnOne(t)));
        }
        List<String> left = new ArrayList<>();
        for (TaskWork.Failure f : work.finishLogged("returning a CUDA task").failures()) {
            outcomes.put(f.pid(), new TaskReturn.Outcome(TaskReturn.End.GAVE_UP, List.of(), null, CudaErrors.describe(f.cause())));
        }
        for (CudaTask t : touched) {
            TaskReturn.Outcome o = outcomes.get(t.pid);
            if (o != null && o.back()) {
                t.current = t.initial;
                t.uncertain = false;
                continue;
            }
            // the driver's last word, else what criu knows (nothing, when a call was under way as the agent died)
            CudaState last = o != null && o.last() != null ? o.last() : t.uncertain ? null : t.current;
            if (last != null) t.current = last;
            t.uncertain = t.uncertain || last == null || last == t.initial;
            left.add("pid " + t.pid + ": left " + (last == null ? "in an unknown CUDA state" : last.word()) + ", not "
                    + t.initial.word() + " as before the dump (" + (o == null ? "criu was told to stop" : o.error())
                    + "); criu leaves it alive" + (agent().gone() ? "" : " and the CUDA agent tries again once criu is gone")
                    + ": if it stays so, run " + TaskReturn.byHand(t.pid, t.initial, last));
        }
        return left;
    }

    /** One task back: through the agent while it lives (one attempt), else through criu's own backend. */
    private TaskReturn.Outcome returnOne(CudaTask t) {
        TaskReturn.Listener quiet = new TaskReturn.Listener() { };
        BooleanSupplier alive = () -> t.startTime == 0 ? ProcStat.alive(t.pid) : ProcStat.alive(t.pid, t.startTime);
        if (!agent().gone()) {
            TaskReturn.Outcome o = TaskReturn.run(deps.backend(), t.pid, t.initial, alive, 0, 0, quiet);
            if (o.back() || !agent().gone()) return o;
            t.uncertain = true;
        }
        CudaBackend own;
        try {
            own = fallback();
        } catch (IllegalStateException e) {
            return new TaskReturn.Outcome(TaskReturn.End.GAVE_UP, List.of(), null, e.getMessage());
        }
        long settle = t.uncertain ? lockTimeoutMs + 2000L : 0;
        return TaskReturn.run(own, t.pid, t.initial, alive, fallbackGiveUpMs, settle, new TaskReturn.Listener() {
            @Override
            public void back(CudaState first, List<String> steps, long ms) {
                log.info("pid {}: {} -> {}{} through {} in criu (the CUDA agent died){}", t.pid, first.word(), t.initial.word(),
                        steps.isEmpty() ? " (nothing to do)" : " via " + steps, own.describe(),
                        settle > 0 ? "; watching it for " + settle + " ms in case a call the agent started lands" : "");
            }

            @Override
            public void movedAgain(List<String> steps) {
                log.info("pid {}: moved again by a call the CUDA agent had started; back via {}", t.pid, steps);
            }
        });
    }

    /** criu's own backend, opened the first time the agent turns out dead (as CRIU_CUDA_GUARD=0 opens it). */
    private synchronized CudaBackend fallback() {
        if (fallback == null) {
            BackendSelection s = deps.fallback().get();
            fallback = s.chosen().orElseThrow(() -> new IllegalStateException("the CUDA agent died and criu cannot open a "
                    + "CUDA backend of its own: " + s.reason()));
            log.info("the CUDA agent died: returning its tasks through {} in criu", fallback.describe());
        }
        return fallback;
    }
}

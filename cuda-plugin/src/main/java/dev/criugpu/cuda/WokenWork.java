package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Interrupts;
import dev.criugpu.cuda.sys.RestoreThreadControl;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;

/**
 * The shape every per-task round of a session has (a dump's checkpoints and returns, a restore's restores): wake the
 * task's restore thread (hook thread), run its driver calls on a worker ({@link TaskWork}), join them all, stop every
 * woken restore thread again, and report the first error of many. The driver serves a stopped task's calls on that
 * thread, and criu must get its tasks back stopped as it left them.
 */
final class WokenWork {
    private static final Logger log = LoggerFactory.getLogger(WokenWork.class);
    /** How long criu, told to stop, waits for its woken restore threads to stop again: well inside rule 4's 2 s. */
    static final long STOP_GRACE_MS = 200;

    /** What one round left: the jobs that failed and the restore threads that could not be stopped again. */
    record Ended(List<TaskWork.Failure> failures, List<String> restopErrors) {
    }

    private final TaskWork work;
    private final RestoreThreadControl threads;
    private final long stopGraceMs;
    /**
     * Hears when a restore thread runs with the signals blocked that we block while it runs (its own mask is in
     * {@link RestoreThreadControl.Woken}) and when it is stopped again with its mask back: what is told the first
     * and not the second when criu is gone — killed, or ending before the thread could stop — has the mask to give
     * back.
     */
    interface Masks {
        void blocked(RestoreThreadControl.Woken w);

        void givenBack(RestoreThreadControl.Woken w);

        Masks NONE = new Masks() {
            @Override
            public void blocked(RestoreThreadControl.Woken w) {
            }

            @Override
            public void givenBack(RestoreThreadControl.Woken w) {
            }
        };
    }

    private final Masks masks;
    private final List<RestoreThreadControl.Woken> woken = new ArrayList<>();

    WokenWork(RestoreThreadControl threads, boolean parallel) {
        this(threads, parallel, STOP_GRACE_MS, Masks.NONE);
    }

    /** {@code stopGraceMs}: how long criu, told to stop, gives its woken restore threads to stop again. */
    WokenWork(RestoreThreadControl threads, boolean parallel, long stopGraceMs, Masks masks) {
        this.threads = threads;
        this.work = new TaskWork(parallel);
        this.stopGraceMs = stopGraceMs;
        this.masks = masks;
    }

    /** Lets the task's restore thread run until {@link #finish}; a {@link CriuException} when it cannot. */
    void wake(int pid, int restoreTid) {
        RestoreThreadControl.Woken w = threads.wake(pid, restoreTid);
        woken.add(w);
        masks.blocked(w);
    }

    /** Starts the task's driver calls on a worker; {@link #finish} joins them. */
    void submit(int pid, TaskWork.Job job) {
        work.submit(pid, job);
    }

    /** One call on a worker, waited for at once (interruptibly): see {@link TaskWork#runNow}. */
    void runNow(int pid, String what, TaskWork.Job job) throws Exception {
        work.runNow(pid, what, job);
    }

    /** Whether a round is under way (jobs started or threads woken and not finished). */
    boolean underWay() {
        return !work.idle() || !woken.isEmpty();
    }

    /**
     * Joins every job, then stops every woken restore thread again. When criu is told to stop, each gets until
     * the stop grace ({@link #STOP_GRACE_MS}) after the join: a restore thread inside a driver call stops only when the call returns,
     * which can take as long as the call, and criu is about to end (the kernel lets its tasks go then). One that does
     * not stop in time keeps the signals we blocked while it ran ({@link Masks}).
     *
     * @param what what the jobs do, for the line criu logs when a stop signal cuts the wait short
     */
    Ended finish(String what) {
        List<TaskWork.Failure> failures = List.of();
        List<String> restopErrors = new ArrayList<>();
        try {
            failures = work.joinAll(what);
        } finally {
            if (Interrupts.pendingStop().isPresent()) {
                restopWhileEnding();
            } else {
                for (RestoreThreadControl.Woken w : woken) {
                    try {
                        threads.restop(w);
                        masks.givenBack(w);
                    } catch (CriuException e) {
                        restopErrors.add(e.getMessage());
                    }
                }
            }
            woken.clear();
        }
        return new Ended(failures, restopErrors);
    }

    /** {@link #finish}, with every restore thread that could not be stopped again logged at once. */
    Ended finishLogged(String what) {
        Ended ended = finish(what);
        ended.restopErrors().forEach(e -> log.error("{}", e));
        return ended;
    }

    private void restopWhileEnding() {
        long deadline = System.nanoTime() + stopGraceMs * 1_000_000;
        for (RestoreThreadControl.Woken w : woken) {
            try {
                if (threads.restopBefore(w, deadline)) {
                    masks.givenBack(w);
                } else {
                    log.warn("criu is ending: CUDA restore thread {} of pid {} is still inside a driver call; it keeps"
                            + " the signals blocked while it ran until the CUDA agent gives its mask back", w.tid(), w.pid());
                }
            } catch (CriuException e) {
                log.debug("criu is ending: {}", e.getMessage());
            }
        }
    }

    /** The first of {@code errors} as criu's error, the others logged ahead of it ("and N more, see above"). */
    static CriuException firstOf(int errno, List<String> errors) {
        errors.stream().skip(1).forEach(e -> log.error("{}", e));
        return new CriuException(errno, errors.getFirst()
                + (errors.size() > 1 ? " (and " + (errors.size() - 1) + " more, see above)" : ""));
    }
}

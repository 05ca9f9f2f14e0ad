package dev.criugpu.cuda;

import dev.criugpu.cuda.sys.RestoreThreadControl;

import java.util.HashSet;
import java.util.Set;

/** Records the restore-thread wake/re-stop dance instead of ptracing (the real one is RestoreThreadsTest's). */
final class FakeThreads implements RestoreThreadControl {
    private final FakeDriver.Events events;
    private final Set<Integer> running = new HashSet<>();
    private final Set<Integer> held = new HashSet<>();

    FakeThreads(FakeDriver.Events events) {
        this.events = events;
    }

    @Override
    public synchronized Woken wake(int pid, int tid) {
        events.add("wake " + pid);
        running.add(tid);
        return new Woken(pid, tid, 0);
    }

    @Override
    public synchronized void restop(Woken w) {
        events.add("restop " + w.pid());
        running.remove(w.tid());
    }

    @Override
    public synchronized boolean restopBefore(Woken w, long deadlineNanos) {
        events.add("restop-before " + w.pid());
        running.remove(w.tid());
        return true;
    }

    /** criu stopped the task (it froze it after PAUSE_DEVICES, or created it stopped on restore). */
    synchronized void hold(int pid) {
        held.add(pid);
    }

    /**
     * Whether the driver can serve a call for the task now: the driver's work happens on the task's restore
     * thread, so with the task stopped by criu and that thread not woken, a call would wait for ever.
     */
    synchronized boolean served(int pid) {
        return !held.contains(pid) || running.contains(pid);
    }

    /** Threads woken and not stopped again: criu would fail to detach these. */
    synchronized Set<Integer> stillRunning() {
        return Set.copyOf(running);
    }
}

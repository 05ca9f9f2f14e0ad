package dev.criugpu.cuda;

import dev.criugpu.cuda.guard.GuardedTask;
import dev.criugpu.cuda.guard.WatchdogLink;

/** The watchdog link, writing what criu would tell the watchdog into the shared event record. */
final class RecordingWatchdog implements WatchdogLink {
    private final FakeDriver.Events events;
    int starts;

    RecordingWatchdog(FakeDriver.Events events) {
        this.events = events;
    }

    Starter starter() {
        return () -> {
            starts++;
            return this;
        };
    }

    @Override
    public void guard(GuardedTask task) {
        events.add("guard " + task.initial().word() + " " + task.pid());
    }

    @Override
    public void returned(int pid) {
        events.add("returned " + pid);
    }

    @Override
    public void done() {
        events.add("watchdog-done");
    }

    @Override
    public void awaitReady(long timeoutMs) {
    }
}

package dev.criugpu.cuda;

import dev.criugpu.cuda.agent.GuardedTask;
import dev.criugpu.cuda.agent.WatchdogLink;

import java.io.IOException;

/** The watchdog link, writing what criu would tell the watchdog into the shared event record. */
final class RecordingWatchdog implements WatchdogLink {
    private final FakeDriver.Events events;
    /** Set: every guard fails as with an agent that is gone. */
    String broken;

    RecordingWatchdog(FakeDriver.Events events) {
        this.events = events;
    }

    @Override
    public void guard(GuardedTask task) throws IOException {
        if (broken != null) throw new IOException(broken);
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
}

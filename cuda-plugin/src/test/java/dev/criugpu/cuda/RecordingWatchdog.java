package dev.criugpu.cuda;

import dev.criugpu.cuda.agent.GuardedTask;
import dev.criugpu.cuda.agent.WatchdogLink;

import java.io.IOException;

/** The watchdog link, writing what criu would tell the watchdog into the shared event record. */
final class RecordingWatchdog implements WatchdogLink {
    private final FakeDriver.Events events;
    /** Set: every guard fails as with an agent that is gone. */
    String broken;

    private final String prefix;

    RecordingWatchdog(FakeDriver.Events events) {
        this(events, "");
    }

    /** Events prefixed (a second watcher beside the first). */
    RecordingWatchdog(FakeDriver.Events events, String prefix) {
        this.events = events;
        this.prefix = prefix;
    }

    @Override
    public void guard(GuardedTask task) throws IOException {
        if (broken != null) throw new IOException(broken);
        events.add(prefix + "guard " + task.initial().word() + " " + task.pid());
    }

    @Override
    public void returned(int pid) {
        events.add(prefix + "returned " + pid);
    }

    @Override
    public void done() throws IOException {
        if (broken != null) throw new IOException(broken);
        events.add(prefix + "watchdog-done");
    }
}

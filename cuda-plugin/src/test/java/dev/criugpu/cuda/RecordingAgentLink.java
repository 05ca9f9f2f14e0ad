package dev.criugpu.cuda;

import dev.criugpu.cuda.agent.WatchedTask;
import dev.criugpu.cuda.agent.AgentLink;

import java.io.IOException;

/** The agent link, writing what criu would tell the agent into the shared event record. */
final class RecordingAgentLink implements AgentLink {
    private final FakeDriver.Events events;
    /** Set: every watch fails as with an agent that is gone. */
    String broken;

    private final String prefix;

    RecordingAgentLink(FakeDriver.Events events) {
        this(events, "");
    }

    /** Events prefixed (a second watcher beside the first). */
    RecordingAgentLink(FakeDriver.Events events, String prefix) {
        this.events = events;
        this.prefix = prefix;
    }

    @Override
    public void watch(WatchedTask task) throws IOException {
        if (broken != null) throw new IOException(broken);
        events.add(prefix + "watch " + task.initial().word() + " " + task.pid());
    }

    @Override
    public void returned(int pid) {
        events.add(prefix + "returned " + pid);
    }

    @Override
    public void done() throws IOException {
        if (broken != null) throw new IOException(broken);
        events.add(prefix + "agent-done");
    }

    @Override
    public void blocked(int pid, int tid, long savedMask) {
    }

    @Override
    public void unblocked(int pid, int tid) {
    }
}

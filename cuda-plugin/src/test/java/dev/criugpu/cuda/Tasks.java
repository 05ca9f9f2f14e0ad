package dev.criugpu.cuda;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Real processes standing for the dumped or restored tasks, so /proc answers for their pids as criu's would. */
final class Tasks implements AutoCloseable {
    private final List<Process> started = new ArrayList<>();

    int start() throws IOException {
        Process p = new ProcessBuilder("sleep", "600").start();
        started.add(p);
        return (int) p.pid();
    }

    /** Whether the task with this pid was killed (waits a bounded time for the kill to land). */
    boolean killed(int pid) throws InterruptedException {
        for (Process p : started) {
            if (p.pid() == pid) return p.waitFor(10, TimeUnit.SECONDS);
        }
        throw new IllegalArgumentException("no task " + pid);
    }

    boolean alive(int pid) {
        return started.stream().anyMatch(p -> p.pid() == pid && p.isAlive());
    }

    void kill(int pid) throws InterruptedException {
        for (Process p : started) if (p.pid() == pid) p.destroyForcibly().waitFor();
    }

    @Override
    public void close() throws InterruptedException {
        for (Process p : started) p.destroyForcibly().waitFor();
    }
}

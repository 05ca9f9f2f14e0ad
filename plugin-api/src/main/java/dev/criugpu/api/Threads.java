package dev.criugpu.api;

import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;

/**
 * The plugins' own threads. Every one is a daemon: criu ends its process when it is done (or told to stop) whatever
 * a driver call of ours is still doing, and a helper process ends when its main thread says so; no thread of ours
 * may hold either up.
 */
public final class Threads {
    private Threads() {
    }

    /** Daemon threads named {@code name}, for an executor. */
    public static ThreadFactory daemons(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    /** Starts {@code body} on a new daemon thread named {@code name}. */
    public static Thread startDaemon(String name, Runnable body) {
        Thread t = daemons(name).newThread(body);
        t.start();
        return t;
    }

    /** Runs each task on a daemon thread of its own named {@code name} (one-off work such as a process start). */
    public static Executor daemonEach(String name) {
        return r -> startDaemon(name, r);
    }
}

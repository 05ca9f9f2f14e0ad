package dev.criugpu.api;

import dev.criugpu.api.sys.Syscalls;

/**
 * Ends criu from a hook with a status of ours. criu ignores what the plugins' exit hook returns
 * ({@code cr_plugin_fini} is void) and, on {@code dump -R}, resumes the tree and exits 0 after it; when a plugin has
 * to leave a task of that tree in a state the user must repair by hand, ending criu with status 1 is the only way
 * its caller learns the dump was not clean. The kernel detaches the tree when criu ends, so it runs on.
 */
public final class CriuExit {
    private CriuExit() {
    }

    /** Writes every queued log line (this is the hook thread), then ends criu with {@code status}. */
    public static void now(int status) {
        LogSink.drain();
        Syscalls.exitNow(status);
    }
}

package dev.criugpu.cuda.guard;

import java.io.IOException;

/** criu's side of the {@link Watchdog}: what the dump tells it, in order. */
public interface WatchdogLink {
    /** Before the task's CUDA state is changed for the first time. */
    void guard(GuardedTask task) throws IOException;

    /** criu put the task back into its state before the dump itself. */
    void returned(int pid) throws IOException;

    /** criu's exit hook is over: from now on the watchdog acts once criu has gone. */
    void done() throws IOException;

    /** Waits (bounded) until the watchdog has said it runs; throws with what it printed otherwise. */
    void awaitReady(long timeoutMs) throws IOException;

    /** A link that watches nothing ({@code CRIU_CUDA_GUARD=0}). */
    WatchdogLink NONE = new WatchdogLink() {
        @Override
        public void guard(GuardedTask task) {
        }

        @Override
        public void returned(int pid) {
        }

        @Override
        public void done() {
        }

        @Override
        public void awaitReady(long timeoutMs) {
        }
    };

    /** Starts a watchdog for this criu; called once, at the first CUDA task of a dump. */
    interface Starter {
        WatchdogLink start() throws IOException;
    }
}

package dev.criugpu.cuda.agent;

import java.io.IOException;

/** What a dump tells the process that answers for its tasks if criu goes away (the {@link CudaAgent}), in order. */
public interface WatchdogLink {
    /** Before the task's CUDA state is changed for the first time. */
    void guard(GuardedTask task) throws IOException;

    /** criu put the task back into its state before the dump itself. */
    void returned(int pid) throws IOException;

    /** criu's exit hook is over: from now on the watch acts once criu has gone. */
    void done() throws IOException;

    /** Whether what answers for the tasks has died during the dump (then nothing will once criu is gone). */
    default boolean gone() {
        return false;
    }

    /** Nobody watches ({@code CRIU_CUDA_GUARD=0}). */
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
    };
}

package dev.criugpu.cuda.agent;

import java.io.IOException;

/** What a dump tells the CUDA agent about its tasks, so that the agent answers for them if criu goes away; in order. */
public interface AgentLink {
    /** Before the task's CUDA state is changed for the first time. */
    void watch(WatchedTask task) throws IOException;

    /** criu put the task back into its state before the dump itself. */
    void returned(int pid) throws IOException;

    /** criu's exit hook is over: from now on the watch acts once criu has gone. */
    void done() throws IOException;

    /**
     * The task's restore thread runs with our signals blocked; {@code savedMask} is its own. Unless {@link
     * #unblocked} follows, it gets that mask back once criu is gone.
     */
    void blocked(int pid, int tid, long savedMask) throws IOException;

    /** The restore thread is stopped again with its own mask. */
    void unblocked(int pid, int tid) throws IOException;

    /** Whether what answers for the tasks has died during the dump (then nothing will once criu is gone). */
    default boolean gone() {
        return false;
    }

    /** No agent ({@code CRIU_CUDA_GUARD=0}): nobody watches. */
    AgentLink NONE = new AgentLink() {
        @Override
        public void watch(WatchedTask task) {
        }

        @Override
        public void returned(int pid) {
        }

        @Override
        public void done() {
        }

        @Override
        public void blocked(int pid, int tid, long savedMask) {
        }

        @Override
        public void unblocked(int pid, int tid) {
        }
    };
}

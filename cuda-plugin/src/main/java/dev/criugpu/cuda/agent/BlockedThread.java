package dev.criugpu.cuda.agent;

/**
 * A task's restore thread that runs with the signals criu's side blocks while it runs, and the mask the thread had
 * before: unless criu says it gave the mask back itself, the agent does once criu is gone. criu tells the agent of it in a
 * {@code blocked} line ({@link AgentProtocol}).
 */
record BlockedThread(int pid, int tid, long savedMask) implements AgentProtocol.ToAgent {
}

package dev.criugpu.cuda.agent;

import dev.criugpu.api.HelperProcess;

/** criu's JVM and the agent as the two ends of a real socketpair, both in the test's JVM. */
record SocketPair(HelperProcess criuSide, HelperProcess agentSide) {
    static SocketPair open() {
        HelperProcess[] p = HelperProcess.pair();
        return new SocketPair(p[0], p[1]);
    }
}

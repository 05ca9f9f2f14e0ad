package dev.criugpu.cuda.agent;

import dev.criugpu.api.HelperProcess;

import java.io.IOException;

/** criu's JVM and the agent as the two ends of a real UNIX socket, both in the test's JVM. */
record SocketPair(HelperProcess criuSide, HelperProcess agentSide) {
    static SocketPair open() throws IOException {
        HelperProcess.Pending pending = HelperProcess.listen();
        HelperProcess agent = HelperProcess.connectTo(pending.socket());
        return new SocketPair(pending.connect(10_000, "the test's agent end"), agent);
    }
}

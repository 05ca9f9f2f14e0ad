package dev.criugpu.cuda.agent;

import dev.criugpu.api.HelperProcess;
import dev.criugpu.api.Threads;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;

import java.io.IOException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The {@link CudaAgent}'s work once it is ready: it reads criu's lines, runs each call on a thread of its own through
 * its {@link AgentOp} and answers, and tells its {@link AgentWatch} the rest; once criu is gone, the watch returns the
 * tasks criu left locked or checkpointed.
 */
final class AgentServer {
    static final long POLL_MS = 50;
    static final long DRAIN_MS = 2000;
    /** How long a restore thread criu left with our signals blocked may take to stop for its mask (it is between calls). */
    static final long MASK_STOP_MS = 10_000;

    private final HelperProcess criu;
    private final AgentWatch watch;
    private final CudaBackend backend;
    private final ExecutorService calls = Executors.newCachedThreadPool(Threads.daemons("cuda-agent-call"));

    AgentServer(HelperProcess criu, AgentWatch watch, CudaBackend backend) {
        this.criu = criu;
        this.watch = watch;
        this.backend = backend;
    }

    /** Serves criu until it is gone, then returns what it left behind; 0 when nothing was left behind. */
    int run() {
        Thread reader = Threads.startDaemon("cuda-agent-criu", this::serve);
        watch.say("serving criu " + "(" + (backend == null ? "no backend" : backend.describe()) + ")");
        while (watch.criuAlive()) {
            if (watch.nothingLeft()) {
                watch.say("criu finished with every task returned by itself or ended with the dump (" + watch.describe() + ")");
                return 0;
            }
            AgentWatch.pause(POLL_MS);
        }
        try {
            reader.join(DRAIN_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        int survivors = watch.returnSurvivors(backend);
        return Math.max(survivors, watch.giveBackMasks(MASK_STOP_MS));
    }

    /** Reads criu's lines until criu's end: calls go to a thread each, watch messages to the watch. */
    void serve() {
        try {
            for (String line; (line = criu.readLine()) != null; ) {
                try {
                    AgentProtocol.ToAgent m = AgentProtocol.toAgent(line);
                    if (m instanceof AgentProtocol.Call c) {
                        calls.execute(() -> answer(c));
                    } else if (!watch.told(m)) {
                        watch.say("ignoring '" + line + "' from criu");
                    }
                } catch (RuntimeException e) {
                    watch.say("ignoring '" + line + "' from criu: " + e.getMessage());
                }
            }
        } catch (IOException e) {
            watch.say("reading from criu failed: " + e.getMessage());
        } finally {
            watch.ended();
        }
    }

    /** Makes the call through its {@link AgentOp} and answers it. */
    private void answer(AgentProtocol.Call c) {
        AgentProtocol.ToCriu reply;
        try {
            if (backend == null) throw new CudaCallException(CudaCallException.AGENT_FAILED, "the CUDA agent has no backend");
            reply = new AgentProtocol.Ok(c.id(), AgentOp.named(c.op()).serve(backend, c.pid(), c.arg()));
        } catch (CudaCallException e) {
            reply = new AgentProtocol.Err(c.id(), e.code(), e.reason());
        } catch (RuntimeException e) {
            reply = new AgentProtocol.Err(c.id(), CudaCallException.AGENT_FAILED, e.toString());
        }
        try {
            criu.writeLine(AgentProtocol.encode(reply));
        } catch (IOException e) {
            // criu has gone; the watch deals with what this call did
        }
    }
}

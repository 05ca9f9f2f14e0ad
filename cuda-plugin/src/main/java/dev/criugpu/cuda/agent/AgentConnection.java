package dev.criugpu.cuda.agent;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.HelperProcess;
import dev.criugpu.api.Interrupts;
import dev.criugpu.api.Threads;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.sys.ProcStat;
import dev.criugpu.api.sys.Syscalls;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * criu's end of the connection to the {@link CudaAgent}, behind {@link AgentClient}: starts the agent (or adopts the
 * one the shim started), hands it its arguments and its log, waits for it to be ready, sends it lines and matches its
 * replies to the calls that wait for them. Every wait gives up when criu is told to stop ({@link Interrupts}).
 */
final class AgentConnection {
    static final long CONNECT_MS = 20_000;

    // named for the client: criu's log and its log levels know these lines by it
    private static final Logger logger = LoggerFactory.getLogger(AgentClient.class);

    private final CompletableFuture<Started> starting;
    private final CompletableFuture<AgentProtocol.ToCriu> ready = new CompletableFuture<>();
    private final Map<Long, CompletableFuture<String>> waiting = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    private HelperProcess agent;
    private String failure;
    /** The agent's end of the socket closed: it died (or was never usable). */
    private volatile boolean gone;
    /** What the agent said of its backend once it was ready. */
    private volatile AgentProtocol.Ready backend = new AgentProtocol.Ready("agent", 0, false, 0, "the CUDA agent (starting)");
    private volatile Path log;
    /** When the launch began (System.nanoTime): the agent's readiness is on the first lock's path (issue 23). */
    private final long launchedNs = System.nanoTime();

    private AgentConnection(CompletableFuture<Started> starting) {
        this.starting = starting;
    }

    /** The agent started (its end of the socketpair handed over), its arguments sent; {@code early}: the shim had started it. */
    private record Started(HelperProcess process, boolean early, long connectedNs) {
    }

    /** Starts the agent on a thread of its own, or adopts the shim's: {@link AgentClient#launch}. */
    static AgentConnection launch(String backend, long settleMs, List<String> jvmOptions, boolean adopt) {
        CompletableFuture<Started> starting = CompletableFuture.supplyAsync(() -> {
            try {
                long self = ProcessHandle.current().pid();
                long start = ProcStat.of(self).map(ProcStat::startTime)
                        .orElseThrow(() -> new IOException("cannot read /proc/" + self + "/stat"));
                Optional<HelperProcess> early = adopt ? HelperProcess.adoptPreStarted() : Optional.empty();
                HelperProcess agent = early.isPresent() ? early.get()
                        : HelperProcess.start(CudaAgent.class.getName(), AgentClient.jvmOptions(jvmOptions), CudaAgent.commandArgs(self));
                long connected = System.nanoTime();
                try {
                    agent.writeLine(AgentProtocol.encode(new AgentProtocol.ArgsLine(
                            new CudaAgent.Args(self, start, backend, settleMs, 600_000).toArgv())));
                } catch (IOException e) {
                    String said = agent.said();
                    agent.close();
                    throw new IOException(e.getMessage() + said, e);
                }
                return new Started(agent, early.isPresent(), connected);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, Threads.daemonEach("cuda-agent-start"));
        return new AgentConnection(starting);
    }

    /** The agent's log file: {@link AgentClient#logTo}. */
    void logTo(Path file) {
        this.log = file;
    }

    /** What the agent said of its backend once it was ready (a stand-in before). */
    AgentProtocol.Ready backend() {
        return backend;
    }

    /** Takes the connected agent on first use and names its log; its first line says whether it opened the backend. */
    synchronized HelperProcess agent() throws CudaCallException {
        if (agent != null && failure == null) return agent;
        if (failure != null) throw new CudaCallException(CudaCallException.AGENT_FAILED, failure);
        try {
            if (log == null) throw new IllegalStateException("the CUDA agent's log file was not named");
            Started started = Interrupts.await(starting, "the CUDA agent to start");
            agent = started.process();
            int fd = ImageFiles.createNewFd(log.getParent(), log.getFileName().toString());
            try {
                agent.writeLine(AgentProtocol.encode(new AgentProtocol.LogLine()), fd);
            } finally {
                Syscalls.libc().close(fd);
            }
            Threads.startDaemon("cuda-agent-replies", this::readReplies);
            AgentProtocol.Ready r = switch (Interrupts.await(ready, "the CUDA agent to open its backend", CONNECT_MS)) {
                case AgentProtocol.Ready said -> said;
                case AgentProtocol.Unusable u -> throw new IOException(u.reason());
                case AgentProtocol.ToCriu other -> throw new IOException("it said " + AgentProtocol.encode(other) + " before it was ready");
            };
            // the agent's pid in criu's log: what a user (or a test) needs to find the process that answers for the tasks
            backend = new AgentProtocol.Ready(r.name(), r.apiVersion(), r.remap(), r.pid(),
                    r.description() + " in the CUDA agent (pid " + r.pid() + ")");
            logger.debug("the CUDA agent (pid {}, {}) had its arguments {} ms and was ready {} ms after criu's JVM {} it", r.pid(),
                    started.early() ? "started by the shim before criu's JVM" : "started by criu's JVM",
                    (started.connectedNs() - launchedNs) / 1_000_000, sinceLaunchMs(), started.early() ? "adopted" : "launched");
            return agent;
        } catch (IOException | ExecutionException | java.util.concurrent.TimeoutException e) {
            Throwable why = e instanceof ExecutionException x && x.getCause() != null ? x.getCause() : e;
            failure = "the CUDA agent is not usable: " + (e instanceof java.util.concurrent.TimeoutException
                    ? "it did not say it was ready within " + CONNECT_MS + " ms" : why.getMessage());
            if (agent != null) agent.close();
            throw new CudaCallException(CudaCallException.AGENT_FAILED, failure);
        }
    }

    private long sinceLaunchMs() {
        return (System.nanoTime() - launchedNs) / 1_000_000;
    }

    /** The agent's lines: first ready (or unusable), then one reply per call. */
    private void readReplies() {
        try {
            String first = agent.readLine();
            if (first == null) {
                ready.completeExceptionally(new IOException("it ended before it was ready" + agent.said()));
                return;
            }
            ready.complete(AgentProtocol.toCriu(first));
            for (String line; (line = agent.readLine()) != null; ) deliver(AgentProtocol.toCriu(line), waiting);
        } catch (IOException | RuntimeException e) {
            ready.completeExceptionally(e);
        } finally {
            synchronized (this) {
                if (failure == null) failure = "the CUDA agent died";
            }
            gone = true;
            waiting.values().forEach(w -> w.completeExceptionally(new CudaCallException(CudaCallException.AGENT_FAILED,
                    "the CUDA agent died before it answered")));
        }
    }

    /** Hands a reply to the call that waits for it; the other lines are no replies. */
    static void deliver(AgentProtocol.ToCriu line, Map<Long, CompletableFuture<String>> waiting) {
        switch (line) {
            case AgentProtocol.Ok ok -> {
                CompletableFuture<String> w = waiting.remove(ok.id());
                if (w != null) w.complete(ok.value());
            }
            case AgentProtocol.Err err -> {
                CompletableFuture<String> w = waiting.remove(err.id());
                if (w != null) w.completeExceptionally(new CudaCallException(err.code(), err.message()));
            }
            default -> {
            }
        }
    }

    /** Sends {@code op}'s call and waits for its reply. */
    <A, R> R call(AgentOp<A, R> op, int pid, A arg) throws CudaCallException {
        HelperProcess a = agent();
        long id = ids.incrementAndGet();
        CompletableFuture<String> reply = new CompletableFuture<>();
        waiting.put(id, reply);
        // the reply reader fails every waiting call when the agent dies, after it set gone: one of us sees the other
        if (gone) reply.completeExceptionally(new CudaCallException(CudaCallException.AGENT_FAILED, "the CUDA agent died"));
        String value;
        try {
            a.writeLine(AgentProtocol.encode(op.call(id, pid, arg)));
            value = Interrupts.await(reply, "the CUDA agent's " + op.word() + " of pid " + pid);
        } catch (IOException e) {
            waiting.remove(id);
            throw new CudaCallException(CudaCallException.AGENT_FAILED, "the CUDA agent died: " + e.getMessage());
        } catch (ExecutionException e) {
            if (e.getCause() instanceof CudaCallException c) throw c;
            throw new CudaCallException(CudaCallException.AGENT_FAILED, String.valueOf(e.getCause()));
        } catch (CriuException e) {
            waiting.remove(id);
            throw e;
        }
        try {
            return op.reply(value);
        } catch (IllegalArgumentException e) {
            throw new CudaCallException(CudaCallException.AGENT_FAILED, "the CUDA agent's " + op.word() + " answered '" + value
                    + "': " + e.getMessage());
        }
    }

    void send(AgentProtocol.ToAgent message) throws IOException {
        try {
            agent().writeLine(AgentProtocol.encode(message));
        } catch (CudaCallException e) {
            throw new IOException(e.reason(), e);
        }
    }

    boolean gone() {
        return gone;
    }

    /** {@link AgentClient#done}: the done line, or, where the agent was never taken, its end. */
    void done() throws IOException {
        HelperProcess a;
        synchronized (this) {
            if (agent == null) {
                failure = "the dump is over";
                starting.thenAccept(started -> started.process().close()); // it reads the end and ends
                return;
            }
            a = agent;
        }
        try {
            a.writeLine(AgentProtocol.encode(new AgentProtocol.Done()));
        } finally {
            a.close();
        }
    }
}

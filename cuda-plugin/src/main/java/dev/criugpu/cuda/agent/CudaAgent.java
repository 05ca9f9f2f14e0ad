package dev.criugpu.cuda.agent;

import dev.criugpu.api.HelperProcess;
import dev.criugpu.api.Threads;
import dev.criugpu.api.sys.ProcStat;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.CliBackend;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.backend.DriverBackend;
import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.state.CudaState;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * The process that makes a dump's CUDA driver calls and answers for its tasks (DESIGN rules 4 and 12). It runs
 * beside criu ({@link HelperProcess}), so that no driver call ever runs inside criu: a thread inside the driver holds
 * up the end of its process until the call returns (seconds for a large checkpoint), and criu told to stop must end
 * at once. criu's JVM sends it the calls of its hooks; it runs each on a thread of its own and answers. When criu is
 * gone it returns the tasks criu left locked or checkpointed ({@link AgentWatch}), finishing what criu started.
 */
public final class CudaAgent {
    static final long POLL_MS = 50;
    static final long DRAIN_MS = 2000;
    /** How long a restore thread criu left with our signals blocked may take to stop for its mask (it is between calls). */
    static final long MASK_STOP_MS = 10_000;
    /** How long an agent the shim started waits for criu's JVM to listen (criu's JVM takes well under a second). */
    static final long CONNECT_WAIT_MS = 20_000;

    /** What the agent is told on its command line. */
    public record Args(Path socket, long criuPid, long criuStart, String backend, Path cudaCheckpoint,
                       long settleMs, long giveUpMs) {
        /** What criu's JVM sends in its {@link AgentProtocol#ARGS} line: all but the socket and criu's pid. */
        public List<String> toArgv() {
            List<String> a = new ArrayList<>(List.of("--criu-start", Long.toString(criuStart), "--backend", backend,
                    "--settle-ms", Long.toString(settleMs), "--give-up-ms", Long.toString(giveUpMs)));
            if (cudaCheckpoint != null) a.addAll(List.of("--cuda-checkpoint", cudaCheckpoint.toString()));
            if (a.stream().anyMatch(w -> w.isEmpty() || w.chars().anyMatch(Character::isWhitespace))) {
                throw new IllegalArgumentException("the CUDA agent's arguments cannot hold blanks: " + a);
            }
            return a;
        }

        static Args parse(String[] argv) {
            Map<String, String> m = new LinkedHashMap<>();
            for (int i = 0; i + 1 < argv.length; i += 2) m.put(argv[i], argv[i + 1]);
            if (argv.length % 2 != 0 || !m.keySet().containsAll(List.of("--socket", "--criu-pid", "--criu-start", "--backend"))) {
                throw new IllegalArgumentException("usage: --socket PATH --criu-pid P, then criu's line: args --criu-start T "
                        + "--backend driver|cli [--settle-ms N] [--give-up-ms N] [--cuda-checkpoint PATH]");
            }
            return new Args(Path.of(m.get("--socket")), Long.parseLong(m.get("--criu-pid")), Long.parseLong(m.get("--criu-start")),
                    m.get("--backend"), m.containsKey("--cuda-checkpoint") ? Path.of(m.get("--cuda-checkpoint")) : null,
                    Long.parseLong(m.getOrDefault("--settle-ms", "12000")),
                    Long.parseLong(m.getOrDefault("--give-up-ms", "600000")));
        }
    }

    /** The agent's command line after {@code --socket PATH} (which {@link HelperProcess} adds): criu's pid. */
    public static List<String> commandArgs(long criuPid) {
        return List.of("--criu-pid", Long.toString(criuPid));
    }

    /** The same with the word the shim replaces by criu's pid: the command the shim starts the agent with. */
    public static List<String> earlyCommandArgs() {
        return List.of("--criu-pid", HelperProcess.CRIU_PID_WORD);
    }

    private final HelperProcess criu;
    private final AgentWatch watch;
    private final CudaBackend backend;
    private final ExecutorService calls = Executors.newCachedThreadPool(Threads.daemons("cuda-agent-call"));

    CudaAgent(HelperProcess criu, AgentWatch watch, CudaBackend backend) {
        this.criu = criu;
        this.watch = watch;
        this.backend = backend;
    }

    /**
     * Connects (an agent the shim started may wait for criu's JVM to listen), takes the rest of its arguments from
     * criu's first line, takes the backend it names (libcuda was opened meanwhile: the slow part of both), then takes
     * its log file from criu's next line and says whether it is ready.
     */
    public static void main(String[] argv) {
        Args a;
        HelperProcess criu;
        // libcuda opens while the agent waits for criu's JVM (issue 23: opening it after criu's first line put
        // 50-200 ms on the first lock's path on the H100); the line decides only whether the driver is used
        CompletableFuture<DriverBackend.Probe> driver = CompletableFuture.supplyAsync(CudaAgent::probeDriver,
                Threads.daemonEach("cuda-agent-probe"));
        try {
            Map<String, String> early = new LinkedHashMap<>();
            for (int i = 0; i + 1 < argv.length; i += 2) early.put(argv[i], argv[i + 1]);
            if (!early.containsKey("--socket") || !early.containsKey("--criu-pid")) throw new IllegalArgumentException(
                    "usage: --socket PATH --criu-pid P");
            long criuPid = Long.parseLong(early.get("--criu-pid"));
            // started by the shim, it may be up before criu's JVM listens
            criu = HelperProcess.connectTo(Path.of(early.get("--socket")),
                    () -> ProcStat.of(criuPid).map(ProcStat::alive).orElse(false), CONNECT_WAIT_MS);
            String first = criu.readLine();
            if (first == null || !first.startsWith(AgentProtocol.ARGS + " ")) {
                throw new IOException("criu's first line is not the agent's arguments: " + first);
            }
            List<String> all = new ArrayList<>(List.of(argv));
            all.addAll(List.of(first.substring(AgentProtocol.ARGS.length() + 1).split(" ")));
            a = Args.parse(all.toArray(String[]::new));
        } catch (IOException | RuntimeException e) {
            System.err.println("cuda agent: " + e.getMessage());
            System.exit(2);
            return;
        }
        CudaBackend backend = null;
        String unusable = null;
        try {
            backend = open(a, driver::join);
        } catch (CudaCallException | RuntimeException e) {
            unusable = e.getMessage();
        }
        PrintStream log;
        try {
            log = openLog(criu.readLine());
        } catch (IOException | RuntimeException e) {
            System.err.println("cuda agent: " + e.getMessage());
            System.exit(2);
            return;
        }
        AgentWatch watch = new AgentWatch(a.criuPid(), a.criuStart(), a.settleMs(), a.giveUpMs(), log);
        try {
            if (backend != null) {
                criu.writeLine("ready " + backend.name() + " " + (backend instanceof DriverBackend d ? d.apiVersion() : 0) + " "
                        + (backend.supportsGpuRemap() ? 1 : 0) + " " + ProcessHandle.current().pid() + " " + backend.describe());
            } else {
                watch.say("no CUDA backend: " + unusable);
                criu.writeLine("unusable " + unusable);
            }
        } catch (IOException e) {
            watch.say("criu went away before the agent was ready");
        }
        System.exit(new CudaAgent(criu, watch, backend).run());
    }

    /**
     * The log file criu's first line names, created anew: a log left by an earlier dump was removed by criu, and a
     * name that exists now (a planted link) is refused. rw------- from the start: it names the dump's pids and states.
     */
    static PrintStream openLog(String firstLine) throws IOException {
        if (firstLine == null) throw new IOException("criu went away before it named the agent's log");
        if (!firstLine.startsWith(AgentProtocol.LOG + " ")) throw new IOException("criu's first line is not its log file: " + firstLine);
        Path file = Path.of(firstLine.substring(AgentProtocol.LOG.length() + 1));
        return new PrintStream(java.nio.channels.Channels.newOutputStream(Files.newByteChannel(file,
                java.util.Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
                java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                        java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")))), true, StandardCharsets.UTF_8);
    }

    /**
     * libcuda looked at, and, where usable, the two queries every task gets made once on the agent's own pid, which
     * has no CUDA state (the answers mean nothing): a dump's first driver calls would otherwise pay for linking their
     * downcalls (tens of milliseconds on the first lock's path).
     */
    static DriverBackend.Probe probeDriver() {
        DriverBackend.Probe probe;
        try {
            probe = DriverBackend.probe();
        } catch (RuntimeException e) {
            return new DriverBackend.Probe(null, 0, "cannot load the CUDA driver library: " + e);
        }
        if (probe.usable()) {
            int self = (int) ProcessHandle.current().pid();
            try {
                probe.backend().restoreThread(self);
                probe.backend().state(self);
            } catch (CudaCallException e) {
                // expected: no CUDA state here
            }
        }
        return probe;
    }

    /**
     * The backend as criu's own init would choose it (CRIU_CUDA_BACKEND; cuda-checkpoint from PATH); {@code driver}
     * is the look at libcuda, asked only where the driver may be used.
     */
    static CudaBackend open(Args a, Supplier<DriverBackend.Probe> driver) throws CudaCallException {
        if (a.cudaCheckpoint() != null) return CliBackend.open(a.cudaCheckpoint());
        PluginConfig.BackendChoice choice = switch (a.backend()) {
            case "driver" -> PluginConfig.BackendChoice.DRIVER;
            case "cli" -> PluginConfig.BackendChoice.CLI;
            default -> PluginConfig.BackendChoice.AUTO;
        };
        BackendSelection s = BackendSelection.choose(choice, driver, System.getenv("PATH"));
        return s.chosen().orElseThrow(() -> new IllegalStateException(s.reason()));
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
                String[] f = line.trim().split(" ");
                try {
                    if (f[0].equals("call")) {
                        calls.execute(() -> answer(f));
                    } else if (!watch.told(f)) {
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

    private void answer(String[] f) {
        String id = f[1];
        String reply;
        try {
            reply = "ok " + id + value(call(f[2], Integer.parseInt(f[3]), f.length > 4 ? f[4] : null));
        } catch (CudaCallException e) {
            reply = "err " + id + " " + e.code() + " " + oneLine(e.reason());
        } catch (RuntimeException e) {
            reply = "err " + id + " " + CudaCallException.AGENT_FAILED + " " + oneLine(e.toString());
        }
        try {
            criu.writeLine(reply);
        } catch (IOException e) {
            // criu has gone; the watch deals with what this call did
        }
    }

    /** A line break in a message would end the reply early and make its rest a line of its own. */
    static String oneLine(String text) {
        return text.replace("\r\n", " ").replace('\n', ' ').replace('\r', ' ');
    }

    private static String value(String v) {
        return v == null ? "" : " " + v;
    }

    private String call(String op, int pid, String arg) throws CudaCallException {
        if (backend == null) throw new CudaCallException(CudaCallException.AGENT_FAILED, "the CUDA agent has no backend");
        switch (op) {
            case "restore-tid" -> {
                OptionalInt tid = backend.restoreThread(pid);
                return tid.isPresent() ? Integer.toString(tid.getAsInt()) : "none";
            }
            case "state" -> {
                return backend.state(pid).word();
            }
            case "lock" -> backend.lock(pid, Integer.parseInt(arg));
            case "checkpoint" -> backend.checkpoint(pid);
            case "restore" -> backend.restore(pid, AgentProtocol.parsePairs(arg));
            case "unlock" -> backend.unlock(pid);
            case "prepare-restore" -> backend.prepareRestore();
            default -> throw new IllegalArgumentException("unknown call " + op);
        }
        return null;
    }

    /** For {@link AgentClient}: a state word the agent sent back. */
    static CudaState stateOf(String word) throws CudaCallException {
        return CudaState.ofWord(word).orElseThrow(() ->
                new CudaCallException(CudaCallException.AGENT_FAILED, "the CUDA agent answered '" + word + "', not a state"));
    }
}

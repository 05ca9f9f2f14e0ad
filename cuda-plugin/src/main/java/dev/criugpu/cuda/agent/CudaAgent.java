package dev.criugpu.cuda.agent;

import dev.criugpu.api.Bootstrap;
import dev.criugpu.api.HelperProcess;
import dev.criugpu.api.Threads;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.sys.DriverBackend;
import dev.criugpu.cuda.config.PluginConfig;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The process that makes a dump's CUDA driver calls and answers for its tasks (DESIGN rules 4 and 12). It runs
 * beside criu ({@link HelperProcess}), so that no driver call ever runs inside criu: a thread inside the driver holds
 * up the end of its process until the call returns (seconds for a large checkpoint), and criu told to stop must end
 * at once. criu's JVM sends it the calls of its hooks; it runs each on a thread of its own and answers. When criu is
 * gone it returns the tasks criu left locked or checkpointed ({@link AgentWatch}), finishing what criu started.
 */
public final class CudaAgent {
    /** What the agent's first line may say, and nothing else: numbers and the backend's name, never a path. */
    private static final java.util.Set<String> ARG_KEYS = java.util.Set.of("--criu-start", "--backend", "--settle-ms", "--give-up-ms");
    private static final java.util.Set<String> BACKENDS = java.util.Set.of("auto", "driver", "cli");

    /**
     * What the agent is told: criu's pid on its command line (from its starter), the rest in criu's first line. Nothing
     * here names a file or a program: the backend is a choice among three (CRIU_CUDA_BACKEND or the plugin dir's cfg,
     * read by criu's JVM), cuda-checkpoint is looked up in the agent's own PATH (criu's environment) and must be
     * trusted, and the log is an fd criu's side opened.
     */
    public record Args(long criuPid, long criuStart, String backend, long settleMs, long giveUpMs) {
        public Args {
            if (!BACKENDS.contains(backend)) throw new IllegalArgumentException("unknown backend '" + backend + "': auto, driver or cli");
        }

        /** What criu's JVM sends in its {@link AgentProtocol#ARGS} line: all but criu's pid. */
        public List<String> toArgv() {
            return List.of("--criu-start", Long.toString(criuStart), "--backend", backend,
                    "--settle-ms", Long.toString(settleMs), "--give-up-ms", Long.toString(giveUpMs));
        }

        static Args parse(long criuPid, String[] words) {
            Map<String, String> m = new LinkedHashMap<>();
            for (int i = 0; i + 1 < words.length; i += 2) {
                if (!ARG_KEYS.contains(words[i]) || m.put(words[i], words[i + 1]) != null) {
                    throw new IllegalArgumentException("criu's line holds '" + words[i] + "', which the agent does not take");
                }
            }
            if (words.length % 2 != 0 || !m.keySet().containsAll(List.of("--criu-start", "--backend"))) {
                throw new IllegalArgumentException("criu's line must be: args --criu-start T --backend auto|driver|cli "
                        + "[--settle-ms N] [--give-up-ms N]");
            }
            return new Args(criuPid, Long.parseLong(m.get("--criu-start")), m.get("--backend"),
                    Long.parseLong(m.getOrDefault("--settle-ms", "12000")), Long.parseLong(m.getOrDefault("--give-up-ms", "600000")));
        }
    }

    /** The agent's command line: criu's pid (it finds criu's end of the connection at fd {@link HelperProcess#CHANNEL_FD}). */
    public static List<String> commandArgs(long criuPid) {
        return List.of("--criu-pid", Long.toString(criuPid));
    }

    /** The same with the word the shim replaces by criu's pid: the command the shim starts the agent with. */
    public static List<String> earlyCommandArgs() {
        return List.of("--criu-pid", HelperProcess.CRIU_PID_WORD);
    }

    /** criu's pid from the command line, which holds nothing else. */
    static long criuPid(String[] argv) {
        if (argv.length != 2 || !argv[0].equals("--criu-pid")) throw new IllegalArgumentException("usage: --criu-pid P");
        return Long.parseLong(argv[1]);
    }

    private CudaAgent() {
    }

    /**
     * Takes criu's end of the connection its starter handed it (refusing any peer but criu), the rest of its arguments
     * from criu's first line, and the backend it names (libcuda was opened meanwhile: the slow part of both), then its
     * log, an fd that comes with criu's next line, and says whether it is ready.
     */
    public static void main(String[] argv) {
        Args a;
        HelperProcess criu;
        // libcuda opens while the agent waits for criu's JVM (issue 23: opening it after criu's first line put
        // 50-200 ms on the first lock's path on the H100); the line decides only whether the driver is used
        CompletableFuture<DriverBackend.Probe> driver = CompletableFuture.supplyAsync(CudaAgent::probeDriver,
                Threads.daemonEach("cuda-agent-probe"));
        // the log's fstat is the agent's first use of that call: linked now, not after criu's log line, which is on the
        // first lock's path (that line's round trip took 16 ms on 2 x H200, against 6 ms when the agent opened its log
        // by name; a first FFM call costs milliseconds to link); then the protocol's first uses (AgentWarmUp)
        Threads.startDaemon("cuda-agent-warm-up", () -> {
            linkLogChecks();
            if (Bootstrap.cpusToSpare()) AgentWarmUp.run();
        });
        try {
            long criuPid = criuPid(argv);
            criu = HelperProcess.inherited(criuPid);
            String first = criu.readLine();
            if (first == null) throw new IOException("criu closed the connection before it sent the agent's arguments");
            if (!(AgentProtocol.toAgent(first) instanceof AgentProtocol.ArgsLine args)) {
                throw new IOException("criu's first line is not the agent's arguments: " + first);
            }
            a = Args.parse(criuPid, args.words().toArray(String[]::new));
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
            String line = criu.readLine();
            log = openLog(line, line == null ? -1 : criu.takeFd());
        } catch (IOException | RuntimeException e) {
            System.err.println("cuda agent: " + e.getMessage());
            System.exit(2);
            return;
        }
        AgentWatch watch = new AgentWatch(a.criuPid(), a.criuStart(), a.settleMs(), a.giveUpMs(), log);
        try {
            if (backend != null) {
                criu.writeLine(AgentProtocol.encode(new AgentProtocol.Ready(backend.name(), backend.apiVersion(),
                        backend.supportsGpuRemap(), ProcessHandle.current().pid(), backend.describe())));
            } else {
                watch.say("no CUDA backend: " + unusable);
                criu.writeLine(AgentProtocol.encode(new AgentProtocol.Unusable(String.valueOf(unusable))));
            }
        } catch (IOException e) {
            watch.say("criu went away before the agent was ready");
        }
        System.exit(new AgentServer(criu, watch, backend).run());
    }

    private static void linkLogChecks() {
        try {
            dev.criugpu.api.sys.Syscalls.libc().fileStat(0);
        } catch (RuntimeException e) {
            // only a warm-up: openLog makes the call that counts
        }
    }

    /**
     * The log behind {@code fd}, which came with criu's {@link AgentProtocol#LOG} line: criu's side created the file
     * next to the images (new, rw-------, never through a link); the agent creates nothing and opens no name.
     */
    static PrintStream openLog(String line, int fd) throws IOException {
        if (line == null) throw new IOException("criu went away before it handed over the agent's log");
        if (!(parsed(line) instanceof AgentProtocol.LogLine)) throw new IOException("criu's line is not its log: " + line);
        if (fd < 0) throw new IOException("criu's log line came without its fd");
        try {
            if (!dev.criugpu.api.sys.Syscalls.libc().fileStat(fd).isRegularFile()) {
                throw new IOException("the log criu handed over is not a regular file");
            }
        } catch (dev.criugpu.api.sys.SyscallException e) {
            throw new IOException("the log criu handed over: " + e.getMessage(), e);
        }
        return new PrintStream(new FdOutputStream(fd), true, StandardCharsets.UTF_8);
    }

    /** One of criu's lines, or null where it is none. */
    private static AgentProtocol.ToAgent parsed(String line) {
        try {
            return AgentProtocol.toAgent(line);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** Writes straight to an fd of ours (unbuffered: each line is in the file when it is said). */
    private static final class FdOutputStream extends java.io.OutputStream {
        private final int fd;

        FdOutputStream(int fd) {
            this.fd = fd;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            try {
                dev.criugpu.api.sys.Sockets.write(fd, b, off, len);
            } catch (dev.criugpu.api.sys.SyscallException e) {
                throw new IOException(e.getMessage(), e);
            }
        }
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
        PluginConfig.BackendChoice choice = switch (a.backend()) {
            case "driver" -> PluginConfig.BackendChoice.DRIVER;
            case "cli" -> PluginConfig.BackendChoice.CLI;
            default -> PluginConfig.BackendChoice.AUTO;
        };
        BackendSelection s = BackendSelection.choose(choice, driver, System.getenv("PATH"));
        return s.chosen().orElseThrow(() -> new IllegalStateException(s.reason()));
    }
}

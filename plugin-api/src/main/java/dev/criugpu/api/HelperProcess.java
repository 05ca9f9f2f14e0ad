package dev.criugpu.api;

import dev.criugpu.api.sys.ProcStat;
import dev.criugpu.api.sys.TrustedPaths;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A Java program of our class path that runs beside criu and outlives it, connected to criu's JVM by a UNIX socket
 * in a directory only root can enter. It is never criu's child: criu waits for every child after killing a dumped
 * tree and treats any other as a bug, so a shell starts it in the background (in a session of its own where setsid
 * exists) and exits at once, and is reaped here. A background job ignores SIGINT and SIGQUIT, so Ctrl-C meant for
 * criu does not reach it; when criu ends, for any reason, the helper reads the end of the stream.
 */
public final class HelperProcess implements AutoCloseable {
    private static final String SHELL = "/bin/sh";
    private static final String PID_FILE = "helper.pid";
    /** The helper's /proc/PID/stat line as the starting shell read it: its start time tells a reused pid apart. */
    private static final String STAT_FILE = "helper.stat";
    private static final String OUTPUT_FILE = "helper.out";
    private static final long SHELL_WAIT_S = 10;
    /** What would add options or classes to the helper's JVM behind our back. */
    static final List<String> UNTRUSTED_ENVIRONMENT = List.of("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH");
    private static final List<Path> SETSID = List.of(Path.of("/usr/bin/setsid"), Path.of("/bin/setsid"));

    // plain channel reads and writes: the JDK's stream adapters share one lock between reading and writing
    private final SocketChannel channel;
    private final Object writeLock = new Object();
    private final ByteBuffer readBuffer = ByteBuffer.allocate(4096).flip();
    private final java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream();

    private HelperProcess(SocketChannel channel) {
        this.channel = channel;
    }

    /** A socket waiting for its helper: the helper's start overlaps whatever criu does meanwhile. */
    public static final class Pending {
        private final ServerSocketChannel server;
        private final Path dir;

        private Pending(ServerSocketChannel server, Path dir) {
            this.server = server;
            this.dir = dir;
        }

        /** Where the helper connects. */
        public Path socket() {
            return dir.resolve("helper.sock");
        }

        /** Waits (bounded, and given up when criu is told to stop) for the helper to connect. */
        public HelperProcess connect(long timeoutMs, String what) throws IOException {
            try (Selector selector = Selector.open()) {
                server.configureBlocking(false);
                server.register(selector, SelectionKey.OP_ACCEPT);
                long deadline = System.nanoTime() + timeoutMs * 1_000_000;
                while (true) {
                    SocketChannel c = server.accept();
                    if (c != null) {
                        c.configureBlocking(true);
                        return new HelperProcess(c);
                    }
                    long left = (deadline - System.nanoTime()) / 1_000_000;
                    if (left <= 0) throw new IOException(what + " did not connect within " + timeoutMs + " ms" + said());
                    if (ended()) throw new IOException(what + " ended before it connected" + said());
                    Interrupts.check(what + " to start");
                    selector.select(Math.min(left, Interrupts.SLICE_MS));
                }
            } finally {
                discard();
            }
        }

        /**
         * Whether the helper's process has gone: its pid (which the starting shell wrote) is free, a zombie — nobody
         * may ever reap it, as in a container whose init waits for nothing — or another process's.
         */
        boolean ended() {
            try {
                Path pidFile = dir.resolve(PID_FILE);
                if (!Files.isRegularFile(pidFile)) return false;
                String pid = Files.readString(pidFile).strip();
                if (pid.isEmpty()) return false;
                Optional<ProcStat> now = ProcStat.of(Long.parseLong(pid));
                if (now.isEmpty() || !now.get().alive()) return true;
                Path statFile = dir.resolve(STAT_FILE);
                if (!Files.isRegularFile(statFile)) return false;
                return ProcStat.parse(Files.readString(statFile).strip()).startTime() != now.get().startTime();
            } catch (IOException | IllegalArgumentException e) {
                return false;
            }
        }

        /** What the helper printed before it connected (a JVM that cannot start says why), for the error line. */
        private String said() {
            try {
                String out = Files.readString(dir.resolve(OUTPUT_FILE)).strip().replace('\n', ' ');
                return out.isEmpty() ? "" : "; it said: " + (out.length() > 400 ? out.substring(0, 400) + "..." : out);
            } catch (IOException e) {
                return "";
            }
        }

        /** Gives the helper up before it connected: it finds no socket and ends. */
        public void discard() {
            try {
                if (server != null) server.close();
                Files.deleteIfExists(socket());
                Files.deleteIfExists(dir.resolve(PID_FILE));
                Files.deleteIfExists(dir.resolve(STAT_FILE));
                Files.deleteIfExists(dir.resolve(OUTPUT_FILE));
                Files.deleteIfExists(dir);
            } catch (IOException e) {
                // a leftover empty directory in /tmp is harmless
            }
        }
    }

    /** A socket in a new directory only this user (root) may enter, for a helper to connect to. */
    public static Pending listen() throws IOException {
        return listenIn(Files.createTempDirectory("criu-gpu-")); // rwx------
    }

    private static Pending listenIn(Path dir) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        Pending p = new Pending(server, dir);
        try {
            server.bind(UnixDomainSocketAddress.of(p.socket()));
            return p;
        } catch (IOException | RuntimeException e) {
            p.discard();
            throw e;
        }
    }

    /** What starts the helper's JVM: the trusted java of {@code javaHome}, then the class path's {@code mainClass}. */
    public static List<String> command(Path javaHome, String mainClass, List<String> jvmOptions, String socket, List<String> args) {
        // criu runs as root: what it runs is trust-checked and named by its real path, never looked up in PATH
        List<String> command = new ArrayList<>(List.of(TrustedPaths.requireSafeToLoad(javaHome.resolve("bin/java")).toString()));
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass, "--socket", socket));
        command.addAll(args);
        return command;
    }

    /**
     * Starts {@code mainClass} of this JVM's class path with the JDK this JVM runs; it gets {@code --socket PATH}
     * first, then {@code args}.
     */
    public static Pending start(String mainClass, List<String> jvmOptions, List<String> args) throws IOException {
        Pending p = listen();
        try {
            String sh = TrustedPaths.requireSafeToLoad(Path.of(SHELL)).toString();
            // setsid (util-linux) execs in place when not a group leader, as a background job is not: $! is the helper
            List<String> command = new ArrayList<>(List.of(sh, "-c",
                    "d=\"$1\"; s=\"$2\"; shift 2; if [ -n \"$s\" ]; then \"$s\" \"$@\" </dev/null >\"$d/" + OUTPUT_FILE
                            + "\" 2>&1 & else \"$@\" </dev/null >\"$d/" + OUTPUT_FILE + "\" 2>&1 & fi; "
                            // the helper is this shell's child until the shell exits: its pid cannot be reused yet
                            + "read -r s </proc/$!/stat && echo \"$s\" >\"$d/" + STAT_FILE + "\"; echo $! >\"$d/" + PID_FILE + "\"",
                    "criu-gpu-helper", p.dir.toString(), setsid().map(Path::toString).orElse("")));
            command.addAll(command(Path.of(System.getProperty("java.home")), mainClass, jvmOptions, p.socket().toString(), args));
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            // the JVM of criu refuses these; the helper's, started with criu's environment, must not take them either
            for (String v : UNTRUSTED_ENVIRONMENT) pb.environment().remove(v);
            Process shell = pb.start();
            if (!shell.waitFor(SHELL_WAIT_S, TimeUnit.SECONDS)) {
                shell.destroyForcibly();
                throw new IOException(SHELL + " did not put " + mainClass + " in the background within " + SHELL_WAIT_S + " s");
            }
            if (shell.exitValue() != 0) throw new IOException(SHELL + " starting " + mainClass + " exited with " + shell.exitValue());
            return p;
        } catch (IOException | RuntimeException e) {
            p.discard();
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.discard();
            throw new IOException("interrupted while starting " + mainClass);
        }
    }

    /**
     * The helper the shim started before the JVM (native/src/criu_gpu_shim.c, launch_helper), from the command
     * {@link #command} wrote to {@code java/<plugin>.helper} at install time with {@link #SOCKET_WORD} and
     * {@link #CRIU_PID_WORD} for its socket and criu's pid: its directory, until a plugin adopts it or it is given up.
     */
    private static final AtomicReference<Path> PRE_STARTED = new AtomicReference<>();
    public static final String SOCKET_WORD = "@SOCKET@";
    public static final String CRIU_PID_WORD = "@CRIU_PID@";

    /** Bootstrap: the shim started the plugin's helper in {@code dir}, which holds its pid and output files. */
    static void preStarted(Path dir) {
        Path was = PRE_STARTED.getAndSet(dir);
        if (was != null) new Pending(null, was).discard();
    }

    /**
     * The helper the shim started, with its socket now listening; empty when there is none (or its socket cannot be
     * bound: it is given up, and the caller starts one itself).
     */
    public static Optional<Pending> adoptPreStarted() {
        Path dir = PRE_STARTED.getAndSet(null);
        if (dir == null) return Optional.empty();
        try {
            return Optional.of(listenIn(dir));
        } catch (IOException | RuntimeException e) {
            new Pending(null, dir).discard();
            return Optional.empty();
        }
    }

    /** Bootstrap, after init: a helper the plugin did not adopt finds its directory gone and ends. */
    static void discardUnadopted() {
        Path dir = PRE_STARTED.getAndSet(null);
        if (dir != null) new Pending(null, dir).discard();
    }

    /** util-linux's setsid where it is installed and trusted; without it the helper shares criu's session. */
    private static Optional<Path> setsid() {
        for (Path p : SETSID) {
            if (!Files.isRegularFile(p)) continue;
            try {
                return Optional.of(TrustedPaths.requireSafeToLoad(p));
            } catch (CriuException e) {
                // an untrusted setsid is not run; the next candidate or none
            }
        }
        return Optional.empty();
    }

    /** The helper's end: connects to the socket criu's JVM listens on now. */
    public static HelperProcess connectTo(Path socket) throws IOException {
        return connectTo(socket, () -> true, 0);
    }

    /**
     * The helper's end: connects to the socket criu's JVM listens on. A helper the shim started may be up before
     * criu's JVM binds it: it waits (polling, bounded) while the directory is there and {@code criuAlive} holds; when
     * it gives up on a criu that is gone, it removes what is left in the directory.
     */
    public static HelperProcess connectTo(Path socket, java.util.function.BooleanSupplier criuAlive, long timeoutMs)
            throws IOException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        while (true) {
            SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX);
            try {
                c.connect(UnixDomainSocketAddress.of(socket));
                return new HelperProcess(c);
            } catch (IOException e) {
                c.close();
                Path dir = socket.getParent();
                // no socket yet, or bound but not yet listening (refused): criu's JVM is on its way
                if (!Files.isDirectory(dir)) throw new IOException("cannot connect to " + socket + ": " + e.getMessage());
                if (!criuAlive.getAsBoolean()) {
                    new Pending(null, dir).discard();
                    throw new IOException("criu ended before it listened on " + socket);
                }
                if (System.nanoTime() > deadline) {
                    throw new IOException("no one listened on " + socket + " within " + timeoutMs + " ms: " + e.getMessage());
                }
                try {
                    Thread.sleep(CONNECT_POLL_MS);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while waiting for " + socket);
                }
            }
        }
    }

    private static final long CONNECT_POLL_MS = 2;

    /** One line to the other end (lines of several threads do not interleave). */
    public void writeLine(String text) throws IOException {
        ByteBuffer bytes = ByteBuffer.wrap((text + "\n").getBytes(StandardCharsets.UTF_8));
        synchronized (writeLock) {
            while (bytes.hasRemaining()) channel.write(bytes);
        }
    }

    /** The next line from the other end; null at its end (it closed, or its process ended). One reader at a time. */
    public synchronized String readLine() throws IOException {
        while (true) {
            while (readBuffer.hasRemaining()) {
                byte b = readBuffer.get();
                if (b == '\n') {
                    String text = line.toString(StandardCharsets.UTF_8);
                    line.reset();
                    return text;
                }
                line.write(b);
            }
            readBuffer.clear();
            int n = channel.read(readBuffer);
            readBuffer.flip();
            if (n < 0) {
                if (line.size() == 0) return null;
                String text = line.toString(StandardCharsets.UTF_8);
                line.reset();
                return text;
            }
        }
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            // closing is all that is left to do
        }
    }
}

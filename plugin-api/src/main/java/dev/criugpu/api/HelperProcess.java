package dev.criugpu.api;

import dev.criugpu.api.sys.ProcStat;
import dev.criugpu.api.sys.Sockets;
import dev.criugpu.api.sys.SyscallException;
import dev.criugpu.api.sys.Syscalls;
import dev.criugpu.api.sys.TrustedPaths;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A Java program of our class path that runs beside criu and outlives it, connected to criu's JVM by one end of a
 * socketpair that criu's side made (DESIGN rule 11: nothing is looked up by a name another user could create, and
 * nothing of ours lies in /tmp). The helper inherits its end as fd {@link #CHANNEL_FD}; what it prints goes to a memfd
 * that criu's side reads when the helper ends before it is ready. It is never criu's child: criu waits for every child
 * after killing a dumped tree and treats any other as a bug, so the {@link HelperLauncher} (the shim's, the one that
 * starts the early helper too) starts it from a short-lived child in a session of its own, which says its pid and
 * /proc stat line over a pipe and exits at once. The helper ignores SIGINT and SIGQUIT, so Ctrl-C meant for criu does
 * not reach it; when criu ends, for any reason, it reads the end of the stream.
 */
public final class HelperProcess implements AutoCloseable {
    /** The helper's end of the socketpair, in the helper. */
    public static final int CHANNEL_FD = 3;
    /** The longest line either side sends is a few hundred bytes: a peer that sends more is broken, not read on. */
    static final int MAX_LINE = 1 << 20;
    /** How much of what the helper printed is read for an error line. */
    static final int SAID_LIMIT = 64 << 10;
    private static final int READ_CHUNK = 4096;

    private final int fd;
    /** The memfd the helper prints to, or -1 (the helper's side has none). */
    private final int output;
    /** The helper's pid and start time, as its starter read them; -1 where unknown (the helper's own side). */
    private final long pid;
    private final long startTime;
    private final Object writeLock = new Object();
    private final Object fdLock = new Object();
    private int users;
    private boolean closed;
    private final ArrayDeque<Integer> received = new ArrayDeque<>();
    private final byte[] readBuffer = new byte[READ_CHUNK];
    private int readPos;
    private int readEnd;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();

    private HelperProcess(int fd, int output, long pid, long startTime) {
        this.fd = fd;
        this.output = output;
        this.pid = pid;
        this.startTime = startTime;
    }

    /** What starts the helper's JVM: the trusted java of {@code javaHome}, then the class path's {@code mainClass}. */
    public static List<String> command(Path javaHome, String mainClass, List<String> jvmOptions, List<String> args) {
        // criu runs as root: what it runs is trust-checked and named by its real path, never looked up in PATH
        List<String> command = new ArrayList<>(List.of(TrustedPaths.requireSafeToLoad(javaHome.resolve("bin/java")).toString()));
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass));
        command.addAll(args);
        return command;
    }

    /**
     * Starts {@code mainClass} of this JVM's class path with the JDK this JVM runs, with {@code args}, through the
     * {@link HelperLauncher}; it finds criu's end at fd {@link #CHANNEL_FD} ({@link #inherited}).
     */
    public static HelperProcess start(String mainClass, List<String> jvmOptions, List<String> args) throws IOException {
        List<String> argv = command(Path.of(System.getProperty("java.home")), mainClass, jvmOptions, args);
        String handoff;
        try {
            handoff = HelperLauncher.inUse().launch(argv);
        } catch (IOException e) {
            throw new IOException("cannot start " + mainClass + ": " + e.getMessage(), e);
        }
        return ofHandoff(handoff);
    }

    /** "SOCKET_FD OUTPUT_FD PID STATLINE" as the launcher said it; an unknown identity where it said none. */
    private static HelperProcess ofHandoff(String handoff) {
        String[] f = handoff.split(" ", 3);
        int fd = Integer.parseInt(f[0]);
        int output = Integer.parseInt(f[1]);
        long pid = -1;
        long start = -1;
        String said = f.length > 2 ? f[2] : "";
        int space = said.indexOf(' ');
        try {
            if (space > 0) {
                pid = Long.parseLong(said.substring(0, space));
                start = ProcStat.parse(said.substring(space + 1)).startTime();
            }
        } catch (IllegalArgumentException e) {
            // unknown: only the messages use it
        }
        return new HelperProcess(fd, output, pid, start);
    }

    private static void closeQuietly(int... fds) {
        for (int f : fds) {
            if (f < 0) continue;
            try {
                Syscalls.libc().close(f);
            } catch (RuntimeException e) {
                // nothing more to do with it
            }
        }
    }

    /**
     * The helper's end (in the helper): fd {@link #CHANNEL_FD}, which must be a socket made by {@code criuPid}
     * running as root or as this process's user (SO_PEERCRED); anything else is refused.
     */
    public static HelperProcess inherited(long criuPid) throws IOException {
        if (!Sockets.isSocket(CHANNEL_FD)) throw new IOException("fd " + CHANNEL_FD + " is not a socket: start it through criu's plugin");
        Sockets.Peer peer = Sockets.peer(CHANNEL_FD);
        Optional<String> refused = refusal(peer, criuPid, Sockets.effectiveUid());
        if (refused.isPresent()) throw new IOException(refused.get());
        return new HelperProcess(CHANNEL_FD, -1, -1, -1);
    }

    /** Why a helper refuses {@code peer} as criu {@code criuPid}, its own effective uid being {@code euid}. */
    static Optional<String> refusal(Sockets.Peer peer, long criuPid, int euid) {
        if (peer.uid() != 0 && peer.uid() != euid) {
            return Optional.of("refusing the connection on fd " + CHANNEL_FD + ": its peer runs as uid " + peer.uid()
                    + ", not root or uid " + euid);
        }
        if (peer.pid() != criuPid) {
            return Optional.of("refusing the connection on fd " + CHANNEL_FD + ": its peer is pid " + peer.pid()
                    + ", not criu's pid " + criuPid);
        }
        return Optional.empty();
    }

    /** Both ends of a new socketpair in this process: {@code [0]} criu's side, {@code [1]} the helper's (tests). */
    public static HelperProcess[] pair() {
        int[] p = Sockets.socketPair();
        return new HelperProcess[] {new HelperProcess(p[0], -1, -1, -1), new HelperProcess(p[1], -1, -1, -1)};
    }

    /** An end this process holds as {@code fd} (tests). */
    static HelperProcess ofFd(int fd) {
        return new HelperProcess(fd, -1, -1, -1);
    }

    /**
     * The helper the shim started before the JVM (native/src/shim_jvm.c, launch_helper), from the command
     * {@link #command} wrote to {@code java/<plugin>.helper} at install time with {@link #CRIU_PID_WORD} for criu's
     * pid: criu's end of its socketpair, until a plugin adopts it or it is given up.
     */
    private static final AtomicReference<HelperProcess> PRE_STARTED = new AtomicReference<>();
    public static final String CRIU_PID_WORD = "@CRIU_PID@";

    /**
     * Bootstrap: the shim started the plugin's helper; {@code handoff} is "SOCKET_FD OUTPUT_FD PID STATLINE": criu's
     * end, the memfd it prints to (-1: none), its pid and /proc stat line.
     */
    static void preStarted(String handoff) {
        HelperProcess h = null;
        try {
            h = ofHandoff(handoff);
        } catch (RuntimeException e) {
            // a shim of another build: nothing to adopt
        }
        HelperProcess was = PRE_STARTED.getAndSet(h);
        if (was != null) was.close();
    }

    /** The helper the shim started; empty when there is none (the caller starts one itself). */
    public static Optional<HelperProcess> adoptPreStarted() {
        return Optional.ofNullable(PRE_STARTED.getAndSet(null));
    }

    /** Bootstrap, after init: a helper the plugin did not adopt reads the end of its stream and ends. */
    static void discardUnadopted() {
        HelperProcess h = PRE_STARTED.getAndSet(null);
        if (h != null) h.close();
    }

    /** The helper's pid as its starter saw it; -1 where unknown (on the helper's own side). */
    public long pid() {
        return pid;
    }

    /** Whether the helper's process is still the one started (not gone, not a zombie, its pid not reused). */
    public boolean alive() {
        if (pid <= 0) return false;
        return ProcStat.of(pid).map(s -> s.alive() && (startTime < 0 || s.startTime() == startTime)).orElse(false);
    }

    /** What the helper printed (a JVM that cannot start says why), for an error line: "; it said: ...", or "". */
    public String said() {
        if (output < 0) return "";
        try {
            // our own memfd, by its fd: nothing anyone else can name
            String out;
            try (java.io.InputStream in = Files.newInputStream(Path.of("/proc/self/fd/" + output))) {
                out = new String(in.readNBytes(SAID_LIMIT), StandardCharsets.UTF_8).strip().replace('\n', ' ');
            }
            return out.isEmpty() ? "" : "; it said: " + (out.length() > 400 ? out.substring(0, 400) + "..." : out);
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    /** The socket's peer (SO_PEERCRED). */
    public Sockets.Peer peer() throws IOException {
        enter();
        try {
            return Sockets.peer(fd);
        } catch (SyscallException e) {
            throw new IOException(e.getMessage(), e);
        } finally {
            exit();
        }
    }

    private void enter() throws IOException {
        synchronized (fdLock) {
            if (closed) throw new IOException("the helper's connection is closed");
            users++;
        }
    }

    private void exit() {
        synchronized (fdLock) {
            if (--users == 0 && closed) release();
        }
    }

    /** One line to the other end (lines of several threads do not interleave). */
    public void writeLine(String text) throws IOException {
        writeLine(text, -1);
    }

    /** One line to the other end with {@code passFd} (or -1) along (SCM_RIGHTS); the caller keeps its own copy. */
    public void writeLine(String text, int passFd) throws IOException {
        byte[] bytes = (text + "\n").getBytes(StandardCharsets.UTF_8);
        enter();
        try {
            synchronized (writeLock) {
                Sockets.send(fd, bytes, passFd);
            }
        } catch (SyscallException e) {
            throw new IOException(e.getMessage(), e);
        } finally {
            exit();
        }
    }

    /** The next line from the other end; null at its end (it closed, or its process ended). One reader at a time. */
    public synchronized String readLine() throws IOException {
        while (true) {
            while (readPos < readEnd) {
                byte b = readBuffer[readPos++];
                if (b == '\n') {
                    String text = line.toString(StandardCharsets.UTF_8);
                    line.reset();
                    return text;
                }
                line.write(b);
                if (line.size() > MAX_LINE) {
                    line.reset();
                    throw new IOException("the other end sent a line longer than " + (MAX_LINE >> 10) + " KiB");
                }
            }
            long n;
            enter();
            try {
                n = Sockets.receive(fd, readBuffer, f -> {
                    synchronized (received) {
                        received.add(f);
                    }
                });
            } catch (SyscallException e) {
                throw new IOException(e.getMessage(), e);
            } finally {
                exit();
            }
            readPos = 0;
            readEnd = (int) n;
            if (n == 0) {
                if (line.size() == 0) return null;
                String text = line.toString(StandardCharsets.UTF_8);
                line.reset();
                return text;
            }
        }
    }

    /** The oldest fd that came along with what was read and is not taken yet (now the caller's), or -1. */
    public int takeFd() {
        synchronized (received) {
            Integer f = received.poll();
            return f == null ? -1 : f;
        }
    }

    @Override
    public void close() {
        synchronized (fdLock) {
            if (closed) return;
            closed = true;
            // a thread blocked reading it sees the end now; the fd itself goes once no call is on it
            Sockets.shutdown(fd);
            if (users == 0) release();
        }
    }

    private void release() {
        closeQuietly(fd, output);
        int f;
        while ((f = takeFd()) >= 0) closeQuietly(f);
    }
}

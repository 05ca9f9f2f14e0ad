package dev.criugpu.api;

import dev.criugpu.api.bindings.signal_h;
import dev.criugpu.api.bindings.spawn_h;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A process that outlives criu and is never its child, talked to through two pipes (its stdin, and its stdout and
 * stderr together). criu waits for every child after killing a dumped tree and treats any other child as a bug, so
 * the process is started through {@code /bin/sh}, which puts it in the background and exits at once; we reap the
 * shell here. It runs in a session of its own (so Ctrl-C and a hang-up meant for criu do not reach it), with an empty
 * signal mask and default dispositions (criu's threads block or ignore several signals, which a child would inherit).
 * The JDK's process API is not used: it closes a child's pipes when that child (the shell) exits.
 */
public final class DetachedProcess implements AutoCloseable {
    private static final int[] SIGNALS_TO_DEFAULT = {signal_h.SIGHUP, signal_h.SIGINT, signal_h.SIGQUIT, signal_h.SIGTERM,
            13 /* SIGPIPE */, 10 /* SIGUSR1 */, 14 /* SIGALRM */, 17 /* SIGCHLD */};
    private static final String SHELL = "/bin/sh";

    private int toChild;
    private int fromChild;
    private final StringBuilder pending = new StringBuilder();

    private DetachedProcess(int toChild, int fromChild) {
        this.toChild = toChild;
        this.fromChild = fromChild;
    }

    /**
     * Starts {@code argv} (argv[0] an absolute path) detached.
     *
     * @throws IOException when the pipes or the shell cannot be made, or the shell fails
     */
    public static DetachedProcess start(List<String> argv) throws IOException {
        if (argv.isEmpty() || !argv.getFirst().startsWith("/")) {
            throw new IllegalArgumentException("needs an absolute program path: " + argv);
        }
        int[] in = pipe();
        int[] out;
        try {
            out = pipe();
        } catch (IOException e) {
            closeAll(in[0], in[1]);
            throw e;
        }
        List<String> shArgv = new ArrayList<>(List.of(SHELL, "-c", "\"$@\" <&3 3<&- &", "criu-gpu-detached"));
        shArgv.addAll(argv);
        int shell = spawn_h.spawn(SHELL, shArgv, new int[][] {{in[0], 3}, {out[1], 1}, {out[1], 2}}, new int[] {0},
                SIGNALS_TO_DEFAULT, true);
        closeAll(in[0], out[1]);
        if (shell < 0) {
            closeAll(in[1], out[0]);
            throw new IOException("cannot start " + SHELL + ": errno " + -shell);
        }
        int status = spawn_h.waitpid(shell);
        if (status != 0) {
            closeAll(in[1], out[0]);
            throw new IOException(SHELL + " starting " + argv.getFirst() + " ended with wait status 0x" + Integer.toHexString(status));
        }
        return new DetachedProcess(in[1], out[0]);
    }

    private static int[] pipe() throws IOException {
        int[] p = spawn_h.pipeCloexec();
        if (p.length != 2) throw new IOException("pipe2 failed: errno " + -p[0]);
        return p;
    }

    private static void closeAll(int... fds) {
        for (int fd : fds) if (fd >= 0) spawn_h.close(fd);
    }

    /** Writes one line to its stdin. Fails when it has gone (EPIPE: criu ignores SIGPIPE, JVM threads block it). */
    public synchronized void writeLine(String line) throws IOException {
        if (toChild < 0) throw new IOException("its stdin is closed");
        byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocateFrom(java.lang.foreign.ValueLayout.JAVA_BYTE, bytes);
            long done = 0;
            while (done < bytes.length) {
                spawn_h.Result r = spawn_h.write(toChild, buf.asSlice(done), bytes.length - done);
                if (r.failed() && r.errno() == spawn_h.EINTR) continue;
                if (r.failed()) throw new IOException(r.errno() == spawn_h.EPIPE ? "it has exited" : "write failed: errno " + r.errno());
                done += r.value();
            }
        }
    }

    /**
     * The next line it printed, waiting at most {@code timeoutMs}; empty on time-out. End of output (it exited, or
     * closed its stdout) is an IOException carrying whatever it printed last without a newline.
     */
    public synchronized Optional<String> readLine(long timeoutMs) throws IOException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(512);
            while (true) {
                int nl = pending.indexOf("\n");
                if (nl >= 0) {
                    String line = pending.substring(0, nl);
                    pending.delete(0, nl + 1);
                    return Optional.of(line);
                }
                if (fromChild < 0) throw new IOException("its output is closed");
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0) return Optional.empty();
                int ready = spawn_h.pollIn(fromChild, (int) Math.min(left, Interrupts.SLICE_MS));
                if (ready == -spawn_h.EINTR || ready == 0) continue;
                if (ready < 0) throw new IOException("poll failed: errno " + -ready);
                spawn_h.Result r = spawn_h.read(fromChild, buf, buf.byteSize());
                if (r.failed() && (r.errno() == spawn_h.EINTR || r.errno() == spawn_h.EAGAIN)) continue;
                if (r.failed()) throw new IOException("read failed: errno " + r.errno());
                if (r.value() == 0) {
                    String rest = pending.toString().strip();
                    pending.setLength(0);
                    throw new IOException(rest.isEmpty() ? "it exited" : "it exited after printing: " + rest);
                }
                pending.append(new String(buf.asSlice(0, r.value()).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
                        StandardCharsets.UTF_8));
            }
        }
    }

    /** Closes its stdin (it sees end of input) and our end of its output. */
    @Override
    public synchronized void close() {
        closeAll(toChild, fromChild);
        toChild = -1;
        fromChild = -1;
    }
}

package dev.criugpu.it;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Runs a command on the host (the machine running the build), e.g. gcc for the layout probes, within an
 * {@link ExecBound} ({@link #DEFAULT} unless given): past it, the threads of the command's process tree are shown
 * and the tree is ended (SIGTERM, so that a script's cleanup traps run, then SIGKILL) with {@link CommandTimedOut}.
 */
public final class HostCommand {
    /** gcc, nm, the CLI's inspect, demo.sh (which starts a criu container and dumps and restores in it). */
    public static final ExecBound DEFAULT = ExecBound.of(Duration.ofSeconds(300));
    private static final Duration GRACE = Duration.ofSeconds(10);

    private HostCommand() {
    }

    public static CommandResult run(Path dir, List<String> argv) {
        return run(dir, DEFAULT, argv);
    }

    public static CommandResult run(Path dir, ExecBound bound, List<String> argv) {
        String command = String.join(" ", argv);
        try {
            Process p = new ProcessBuilder(argv).directory(dir.toFile()).start();
            p.getOutputStream().close();
            Drain out = new Drain(p.getInputStream());
            Drain err = new Drain(p.getErrorStream());
            if (!p.waitFor(bound.limit().toMillis(), TimeUnit.MILLISECONDS)) {
                throw timedOut(dir, command, bound, p, out, err);
            }
            out.join();
            err.join();
            return new CommandResult(command, p.exitValue(), out.text(), err.text());
        } catch (IOException e) {
            throw new AssertionError("cannot run " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted running " + command, e);
        }
    }

    private static CommandTimedOut timedOut(Path dir, String command, ExecBound bound, Process p, Drain out, Drain err)
            throws InterruptedException {
        List<ProcessHandle> tree = new ArrayList<>(List.of(p.toHandle()));
        tree.addAll(p.descendants().toList());
        List<String> pids = tree.stream().map(h -> Long.toString(h.pid())).toList();
        StringBuilder diagnostics = new StringBuilder();
        String logs = sh(dir, CommandTimedOut.logTails(bound.logs()), List.of());
        if (!logs.isBlank()) diagnostics.append(logs.strip()).append('\n');
        diagnostics.append("--- the threads of the command's processes\n")
                .append(sh(dir, CommandTimedOut.THREADS, pids).strip());
        tree.forEach(ProcessHandle::destroy);
        if (!p.waitFor(GRACE.toMillis(), TimeUnit.MILLISECONDS)) tree.forEach(ProcessHandle::destroyForcibly);
        diagnostics.append("\nended (SIGTERM, SIGKILL after ").append(GRACE.toSeconds()).append(" s): ")
                .append(tree.stream().map(h -> Long.toString(h.pid())).collect(Collectors.joining(" ")));
        return new CommandTimedOut(command, bound, out.text(), err.text(), diagnostics.toString());
    }

    /** A diagnostic script's output (at most 30 s), or why there is none. */
    private static String sh(Path dir, String script, List<String> args) {
        List<String> argv = new ArrayList<>(List.of("sh", "-c", script, "sh"));
        argv.addAll(args);
        try {
            Process p = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true).start();
            p.getOutputStream().close();
            Drain out = new Drain(p.getInputStream());
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "(the diagnostic script ran past 30 s)\n" + out.text();
            }
            out.join();
            return out.text();
        } catch (IOException e) {
            return "(" + e + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "(interrupted)";
        }
    }

    /** A stream read to its end by a thread of its own; what has come so far can be read at any time. */
    private static final class Drain {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final Thread thread;

        Drain(InputStream in) {
            thread = Thread.ofVirtual().start(() -> {
                byte[] buf = new byte[8192];
                try (in) {
                    for (int n; (n = in.read(buf)) > 0; ) {
                        synchronized (bytes) {
                            bytes.write(buf, 0, n);
                        }
                    }
                } catch (IOException e) {
                    synchronized (bytes) {
                        bytes.writeBytes(("(unreadable: " + e + ")").getBytes(StandardCharsets.UTF_8));
                    }
                }
            });
        }

        /** Waits for the end of the stream; at most 10 s (a process the command left behind may hold it open). */
        void join() throws InterruptedException {
            thread.join(Duration.ofSeconds(10));
        }

        String text() {
            synchronized (bytes) {
                return bytes.toString(StandardCharsets.UTF_8);
            }
        }
    }
}

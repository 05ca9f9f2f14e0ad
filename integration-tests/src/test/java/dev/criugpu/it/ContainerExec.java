package dev.criugpu.it;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.InspectExecResponse;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.StreamType;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.Container;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Commands in a test container, and the local images they need: the one copy the container helpers share. Every
 * command runs within an {@link ExecBound} ({@link ExecBound#DEFAULT} unless given): past it, the command and its
 * descendants are killed and the call throws {@link CommandTimedOut} with what explains the hang.
 */
public final class ContainerExec {
    /** A command's first stderr line, written by the wrapper that then execs it: its pid in the container. */
    private static final String PID_MARK = "criugpu-exec-pid ";
    private static final Pattern PID_LINE = Pattern.compile("\\A" + PID_MARK + "(\\d+)\n");
    /** sh -c: records its pid, then becomes the command (same pid, same process tree as without it). */
    private static final String WRAPPER = "echo \"" + PID_MARK + "$$\" >&2; exec \"$@\"";
    /** For the diagnostics and the kill after a timeout. */
    private static final ExecBound AFTERMATH = ExecBound.of(Duration.ofSeconds(30));
    /** sh with a pid argument: kills it and every descendant (all collected first, so none escapes to init). */
    private static final String KILL_TREE = """
            tree() { echo "$1"; for c in $(cat /proc/$1/task/*/children 2>/dev/null); do tree "$c"; done; }
            pids=$(tree "$1"); kill -9 $pids 2>/dev/null; echo "killed: $pids"
            """;

    private ContainerExec() {
    }

    /** Runs argv in {@code container} (no shell) within the default bound; {@code where} names the container in failures. */
    public static CommandResult exec(Container<?> container, String where, String... argv) {
        return exec(container, where, ExecBound.DEFAULT, argv);
    }

    /** Runs argv in {@code container} (no shell) and waits for it, at most {@code bound}. */
    public static CommandResult exec(Container<?> container, String where, ExecBound bound, String... argv) {
        String command = String.join(" ", argv);
        List<String> wrapped = new ArrayList<>(List.of("sh", "-c", WRAPPER, "sh"));
        wrapped.addAll(List.of(argv));
        DockerClient docker = DockerClientFactory.instance().client();
        Output output = new Output();
        try {
            String id = docker.execCreateCmd(container.getContainerId()).withAttachStdout(true).withAttachStderr(true)
                    .withCmd(wrapped.toArray(String[]::new)).exec().getId();
            try (output) {
                docker.execStartCmd(id).exec(output);
                if (!output.awaitCompletion(bound.limit().toMillis(), TimeUnit.MILLISECONDS)) {
                    throw timedOut(container, where, command, bound, output);
                }
            }
            return new CommandResult(command, exitCode(docker, id), output.stdout(), output.stderr());
        } catch (IOException | RuntimeException e) {
            throw new AssertionError("cannot exec " + command + " in " + where, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted running " + command, e);
        }
    }

    /** The exit code of an exec whose output has ended (docker may take a moment to note that it ended). */
    private static int exitCode(DockerClient docker, String id) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            InspectExecResponse r = docker.inspectExecCmd(id).exec();
            if (!Boolean.TRUE.equals(r.isRunning()) && r.getExitCodeLong() != null) return r.getExitCodeLong().intValue();
            if (System.nanoTime() > deadline) return -1;
            Thread.sleep(20);
        }
    }

    /** Runs a /bin/sh script in {@code container} within the default bound. */
    public static CommandResult sh(Container<?> container, String where, String script) {
        return sh(container, where, ExecBound.DEFAULT, script);
    }

    /** Runs a /bin/sh script in {@code container} and waits for it, at most {@code bound}. */
    public static CommandResult sh(Container<?> container, String where, ExecBound bound, String script) {
        CommandResult r = exec(container, where, bound, "sh", "-c", script);
        return new CommandResult(script, r.exitCode(), r.stdout(), r.stderr());
    }

    /** Past the bound: the logs and the threads as they are, then the kill. */
    private static CommandTimedOut timedOut(Container<?> container, String where, String command, ExecBound bound,
                                            Output output) {
        StringBuilder diagnostics = new StringBuilder();
        String logs = aftermath(container, where, CommandTimedOut.logTails(bound.logs()));
        if (!logs.isBlank()) diagnostics.append(logs.strip()).append('\n');
        diagnostics.append("--- the threads in ").append(where).append(" (").append(output.pid()
                .map(p -> "the command is pid " + p).orElse("the command's pid is unknown")).append(")\n")
                .append(aftermath(container, where, CommandTimedOut.THREADS).strip());
        output.pid().ifPresent(p -> diagnostics.append('\n').append(aftermath(container, where, KILL_TREE, p).strip()));
        return new CommandTimedOut(command, bound, output.stdout(), output.stderr(), diagnostics.toString());
    }

    /** A diagnostic script's output, or why there is none; never throws (the timeout is what to report). */
    private static String aftermath(Container<?> container, String where, String script, String... args) {
        List<String> argv = new ArrayList<>(List.of("sh", "-c", script, "sh"));
        argv.addAll(List.of(args));
        try {
            CommandResult r = exec(container, where, AFTERMATH, argv.toArray(String[]::new));
            return r.stdout() + r.stderr();
        } catch (AssertionError e) {
            return "(" + e.getMessage().lines().findFirst().orElse("failed") + ")";
        }
    }

    /** Fails naming {@code build}, the command that makes it, when the local image {@code tag} is missing. */
    public static void requireImage(String tag, String build) {
        try {
            DockerClientFactory.instance().client().inspectImageCmd(tag).exec();
        } catch (NotFoundException e) {
            throw new AssertionError("docker image " + tag + " is missing: run " + build);
        }
    }

    /** The exec's stdout and stderr as they arrive, the wrapper's pid line taken out of stderr. */
    private static final class Output extends ResultCallback.Adapter<Frame> {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final ByteArrayOutputStream err = new ByteArrayOutputStream();

        @Override
        public synchronized void onNext(Frame frame) {
            if (frame.getStreamType() == StreamType.STDOUT || frame.getStreamType() == StreamType.RAW) {
                out.writeBytes(frame.getPayload());
            } else if (frame.getStreamType() == StreamType.STDERR) {
                err.writeBytes(frame.getPayload());
            }
        }

        synchronized String stdout() {
            return out.toString(StandardCharsets.UTF_8);
        }

        synchronized String stderr() {
            String s = err.toString(StandardCharsets.UTF_8);
            Matcher m = PID_LINE.matcher(s);
            return m.find() ? s.substring(m.end()) : s;
        }

        synchronized Optional<String> pid() {
            Matcher m = PID_LINE.matcher(err.toString(StandardCharsets.UTF_8));
            return m.find() ? Optional.of(m.group(1)) : Optional.empty();
        }
    }
}

package dev.criugpu.it;

import com.github.dockerjava.api.exception.NotFoundException;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.Container;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/** Commands in a test container, and the local images they need: the one copy the container helpers share. */
public final class ContainerExec {
    private ContainerExec() {
    }

    /** Runs argv in {@code container} (no shell) and waits for it; {@code where} names the container in failures. */
    public static CommandResult exec(Container<?> container, String where, String... argv) {
        try {
            Container.ExecResult r = container.execInContainer(StandardCharsets.UTF_8, argv);
            return new CommandResult(String.join(" ", argv), r.getExitCode(), r.getStdout(), r.getStderr());
        } catch (IOException e) {
            throw new AssertionError("cannot exec " + String.join(" ", argv) + " in " + where, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted running " + String.join(" ", argv), e);
        }
    }

    /** Runs a /bin/sh script in {@code container} and waits for it. */
    public static CommandResult sh(Container<?> container, String where, String script) {
        CommandResult r = exec(container, where, "sh", "-c", script);
        return new CommandResult(script, r.exitCode(), r.stdout(), r.stderr());
    }

    /** Fails naming {@code build}, the command that makes it, when the local image {@code tag} is missing. */
    public static void requireImage(String tag, String build) {
        try {
            DockerClientFactory.instance().client().inspectImageCmd(tag).exec();
        } catch (NotFoundException e) {
            throw new AssertionError("docker image " + tag + " is missing: run " + build);
        }
    }
}

package dev.criugpu.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/** Runs a command on the host (the machine running the build), e.g. gcc for the layout probes. */
public final class HostCommand {
    private HostCommand() {
    }

    public static CommandResult run(Path dir, List<String> argv) {
        try {
            Process p = new ProcessBuilder(argv).directory(dir.toFile()).start();
            p.getOutputStream().close();
            CompletableFuture<byte[]> err = CompletableFuture.supplyAsync(() -> readAll(p.getErrorStream()));
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            int rc = p.waitFor();
            return new CommandResult(String.join(" ", argv), rc, out, new String(err.join(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new AssertionError("cannot run " + String.join(" ", argv), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted running " + String.join(" ", argv), e);
        }
    }

    private static byte[] readAll(java.io.InputStream in) {
        try {
            return in.readAllBytes();
        } catch (IOException e) {
            return ("(stderr unreadable: " + e + ")").getBytes(StandardCharsets.UTF_8);
        }
    }
}

package dev.criugpu.api;

import java.nio.file.Path;

/**
 * A helper for {@link HelperProcessTest}: says its pid, then echoes each line back until criu's end closes; with
 * {@code --wait-forever} after the socket it never connects (and ends once the test's JVM is gone). To {@code env} it
 * answers which of the variables it must not inherit it has, and its property {@code foo}.
 */
public final class EchoHelper {
    public static void main(String[] args) throws Exception {
        if (args.length > 2 && args[2].equals("--wait-forever")) {
            Thread.sleep(120_000);
            return;
        }
        HelperProcess criu = HelperProcess.connectTo(Path.of(args[1]));
        criu.writeLine("pid " + ProcessHandle.current().pid());
        for (String line; (line = criu.readLine()) != null; ) {
            criu.writeLine(line.equals("env") ? "env " + HelperProcess.UNTRUSTED_ENVIRONMENT.stream()
                    .filter(v -> System.getenv(v) != null).toList() + " foo=" + System.getProperty("foo") : "got " + line);
        }
    }
}

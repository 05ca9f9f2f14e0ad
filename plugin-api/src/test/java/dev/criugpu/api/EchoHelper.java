package dev.criugpu.api;

/**
 * A helper for {@link HelperProcessTest}: takes criu's end at fd 3 (refusing a peer that is not {@code args[0]}), says
 * its pid, then echoes each line back until criu's end closes; with {@code --wait-forever} it never reads. To
 * {@code long N} it answers a line of N bytes. To
 * {@code env} it answers which of the variables it must not inherit it has, and its property {@code foo}.
 */
public final class EchoHelper {
    public static void main(String[] args) throws Exception {
        HelperProcess criu = HelperProcess.inherited(Long.parseLong(args[0]));
        if (args.length > 1 && args[1].equals("--wait-forever")) {
            Thread.sleep(120_000);
            return;
        }
        criu.writeLine("pid " + ProcessHandle.current().pid());
        for (String line; (line = criu.readLine()) != null; ) {
            if (line.startsWith("long ")) { // a line of that many bytes: what a broken peer might send
                criu.writeLine("x".repeat(Integer.parseInt(line.substring(5))));
                continue;
            }
            criu.writeLine(line.equals("env") ? "env " + HelperProcess.UNTRUSTED_ENVIRONMENT.stream()
                    .filter(v -> System.getenv(v) != null).toList() + " foo=" + System.getProperty("foo") : "got " + line);
        }
    }
}

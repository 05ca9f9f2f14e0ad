package dev.criugpu.api;

import java.util.TreeMap;

/**
 * A helper for {@link HelperProcessTest}: takes criu's end at fd 3 (refusing a peer that is not {@code args[0]}), says
 * its pid, then echoes each line back until criu's end closes; with {@code --wait-forever} it never reads. To
 * {@code long N} it answers a line of N bytes. To
 * {@code env} it answers its whole environment, and its property {@code foo}.
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
            criu.writeLine(line.equals("env") ? "env " + new TreeMap<>(System.getenv()) + " foo=" + System.getProperty("foo")
                    : "got " + line);
        }
    }
}

package dev.criugpu.api;

import java.nio.file.Path;

/** A helper for {@link HelperProcessTest}: says its pid, then echoes each line back until criu's end closes. */
public final class EchoHelper {
    public static void main(String[] args) throws Exception {
        HelperProcess criu = HelperProcess.connectTo(Path.of(args[1]));
        criu.writeLine("pid " + ProcessHandle.current().pid());
        for (String line; (line = criu.readLine()) != null; ) criu.writeLine("got " + line);
    }
}

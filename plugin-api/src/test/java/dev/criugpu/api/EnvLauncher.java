package dev.criugpu.api;

import java.util.List;

/**
 * For {@link HelperProcessTest}, in a JVM started with JAVA_TOOL_OPTIONS and the like in its environment (as criu may
 * be): starts the echo helper and prints what it answers to {@code env}.
 */
public final class EnvLauncher {
    public static void main(String[] args) throws Exception {
        LauncherForTests.install();
        HelperProcess helper = HelperProcess.start(EchoHelper.class.getName(), List.of(),
                List.of(Long.toString(ProcessHandle.current().pid())));
        helper.readLine(); // its pid
        helper.writeLine("env");
        System.out.println(helper.readLine());
        helper.close();
    }
}

package dev.criugpu.api;

import dev.criugpu.api.sys.ProcStat;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * For {@link HelperProcessTest}, in a JVM of its own: a child subreaper (as a container's init is to what it starts)
 * that never reaps what is handed to it. It starts a helper whose JVM cannot start; once the starting shell is gone
 * the helper becomes this process's child and, having died, a zombie for good. Prints
 * {@code zombie PID}, then {@code reported MS-AFTER-IT-DIED MESSAGE} (or {@code connected}): its end of the socket
 * closed when it died, zombie or not.
 */
public final class UnreapingLauncher {
    private static final int PR_SET_CHILD_SUBREAPER = 36;

    public static void main(String[] args) throws Throwable {
        Linker linker = Linker.nativeLinker();
        MethodHandle prctl = linker.downcallHandle(linker.defaultLookup().find("prctl").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG), Linker.Option.firstVariadicArg(1));
        if ((int) prctl.invokeExact(PR_SET_CHILD_SUBREAPER, 1L) != 0) throw new IllegalStateException("prctl failed");
        LauncherForTests.install();
        HelperProcess helper = HelperProcess.start(EchoHelper.class.getName(), List.of("-XX:+NoSuchOptionHere"),
                List.of(Long.toString(ProcessHandle.current().pid())));
        long zombie = -1;
        long diedAt = 0;
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (zombie < 0 && System.nanoTime() < deadline) {
            zombie = zombieChild().orElse(-1L);
            if (zombie < 0) Thread.sleep(2);
        }
        diedAt = System.nanoTime();
        System.out.println("zombie " + zombie);
        String line = helper.readLine();
        System.out.println(line != null ? "connected" : "reported " + (System.nanoTime() - diedAt) / 1_000_000
                + " the broken helper ended" + helper.said());
        System.out.flush();
    }

    /** A child of this process that is a zombie (the JDK reaps only the children it started: the shell). */
    private static Optional<Long> zombieChild() throws IOException {
        long self = ProcessHandle.current().pid();
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : tasks.toList()) {
                String children;
                try {
                    children = Files.readString(t.resolve("children")).strip();
                } catch (IOException e) {
                    continue; // the thread ended
                }
                if (children.isEmpty()) continue;
                for (String c : children.split(" ")) {
                    long pid = Long.parseLong(c);
                    if (ProcStat.of(pid).map(s -> s.state() == 'Z').orElse(false) && pid != self) return Optional.of(pid);
                }
            }
        }
        return Optional.empty();
    }
}

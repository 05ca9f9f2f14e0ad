package dev.criugpu.cli;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code criu-gpu run} in a JVM of its own, as users start it: the command it execs cannot set up an io_uring (ENOSYS,
 * the fallback libuv takes), has the caller's descriptors and none of the JVM's, and a command that is not there
 * gets one line and 127.
 */
class RunCommandTest {
    /** Tries io_uring_setup(8, params) and prints "ring=<fd or -errno>" and the open fds, then the seccomp lines. */
    private static final String PROBE = """
            import ctypes, os
            libc = ctypes.CDLL(None, use_errno=True)
            params = ctypes.create_string_buffer(120)
            fd = libc.syscall(425, 8, params)
            print("ring=%d" % (fd if fd >= 0 else -ctypes.get_errno()))
            if fd >= 0: os.close(fd)
            print("fds=" + ",".join(sorted(os.listdir("/proc/self/fd"), key=int)))
            print([l.strip() for l in open("/proc/self/status") if l.startswith("Seccomp_filters")])
            """;
    private static String python;

    @BeforeAll
    static void findPython() {
        python = List.of("/usr/bin/python3", "/usr/local/bin/python3").stream().filter(p -> Files.isExecutable(Path.of(p)))
                .findFirst().orElse(null);
        Assumptions.assumeTrue(python != null, "NOT RUN: RunCommandTest needs python3 to call io_uring_setup");
    }

    private static List<String> criuGpu(String... args) {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    private record Ran(int status, String out, String err) {
    }

    private static Ran run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        byte[] err = p.getErrorStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "timed out: " + cmd);
        return new Ran(p.exitValue(), new String(out, StandardCharsets.UTF_8), new String(err, StandardCharsets.UTF_8));
    }

    @Test
    void theCommandGetsEnosysForIoUringAndTheCallersDescriptorsOnly() throws Exception {
        Ran plain = run(List.of(python, "-c", PROBE));
        assertEquals(0, plain.status(), plain.err());
        Assumptions.assumeTrue(!plain.out().contains("ring=-"), "NOT RUN: this kernel gives no io_uring to anyone ("
                + plain.out().lines().findFirst().orElse("") + "), so the filter's effect cannot be told apart");

        Ran filtered = run(criuGpu("run", "--", python, "-c", PROBE));
        assertEquals(0, filtered.status(), filtered.err());
        assertTrue(filtered.out().contains("ring=-38\n"), "io_uring_setup must fail with ENOSYS: " + filtered.out());
        String fds = plain.out().lines().filter(l -> l.startsWith("fds=")).findFirst().orElseThrow();
        assertTrue(filtered.out().contains(fds + "\n"), "the JVM's descriptors leaked into the command: "
                + filtered.out() + " (without criu-gpu run: " + fds + ")");
        assertTrue(filtered.out().contains("Seccomp_filters:\\t1"), filtered.out());
    }

    @Test
    void aMissingCommandIsOneLineAnd127() throws Exception {
        Ran r = run(criuGpu("run", "--", "/nonexistent/criu-gpu-test-command"));
        assertEquals(127, r.status(), r.err());
        assertEquals(List.of("criu-gpu run: cannot run /nonexistent/criu-gpu-test-command: ENOENT (errno 2)"), r.err().lines().toList());
    }

    @Test
    void noCommandIsUsage() throws Exception {
        Ran r = run(criuGpu("run", "--"));
        assertEquals(2, r.status());
        assertTrue(r.err().startsWith("usage: criu-gpu run"), r.err());
    }
}

package dev.criugpu.api;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shim's wait for its restore probe (native/launch/child_group.c), on real processes started as the probe is (a
 * session of their own) by a small C driver built here around the same file: a probe that gives no verdict is killed
 * with what it started, a probe that cannot be reaped is left after a second bound, and a stop signal for criu ends the
 * wait at once.
 */
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ProbeGroupTest {
    private static Path driver;

    @TempDir
    Path dir;

    @BeforeAll
    static void build() throws Exception {
        Path module = Path.of(System.getProperty("user.dir"));
        Path launch = module.resolveSibling("native").resolve("launch");
        Files.createDirectories(module.resolve("target/native"));
        driver = module.resolve("target/native/child-group-driver");
        Process gcc = new ProcessBuilder("gcc", "-O1", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I" + launch,
                "-o", driver.toString(), launch.resolve("child_group.c").toString(),
                module.resolve("src/test/resources/dev/criugpu/api/child-group-driver.c").toString())
                .redirectErrorStream(true).start();
        String said = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(gcc.waitFor(60, TimeUnit.SECONDS), "gcc did not finish");
        assertEquals(0, gcc.exitValue(), "gcc failed: " + said);
    }

    /** "END STATUS MS PID" of the driver's wait, as words. */
    private record Wait(String end, String status, long ms) {
    }

    private static Wait run(String mode, long limitMs, long reapMs, String command) throws Exception {
        Process p = new ProcessBuilder(driver.toString(), mode, Long.toString(limitMs), Long.toString(reapMs), command)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out;
        try {
            // its one line fits the pipe: the driver ends without anyone reading
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the wait for the probe did not end");
            out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        } finally {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        Assumptions.assumeFalse(p.exitValue() == 77, "NOT RUN: the probe cannot be traced here (ptrace refused)");
        assertEquals(0, p.exitValue(), out);
        List<String> f = List.of(out.split(" "));
        String status = f.get(1).equals("-") ? "-" : f.get(1) + " " + f.get(2);
        return new Wait(f.getFirst(), status, Long.parseLong(f.get(f.size() - 2)));
    }

    /** Gone, or a zombie nobody reaped yet (an init that does not reap, in a container). */
    private static boolean dead(long pid) throws IOException {
        Path stat = Path.of("/proc/" + pid + "/stat");
        if (!Files.exists(stat)) return true;
        try {
            String s = Files.readString(stat);
            return s.substring(s.lastIndexOf(')') + 2).startsWith("Z");
        } catch (java.nio.file.NoSuchFileException e) {
            return true;
        }
    }

    @Test
    void aProbeThatGivesNoVerdictIsKilledWithWhatItStarted() throws Exception {
        Path started = dir.resolve("started");
        Wait w = run("plain", 300, 5000, "sleep 300 >/dev/null & echo $! > " + started + "; exec sleep 300");
        assertEquals(new Wait("killed", "signal 9", w.ms()), w);
        long child = Long.parseLong(Files.readString(started).strip());
        assertTrue(dead(child), "the probe's own child " + child + " outlived it");
    }

    /**
     * A killed probe whose death its parent cannot collect (here: a tracer holds its zombie; in criu: a probe asleep
     * in a driver call) is given up after the second bound, and the wait ends.
     */
    @Test
    void aProbeThatCannotBeReapedIsLeftAfterTheSecondBound() throws Exception {
        Wait w = run("traced", 200, 700, "exec sleep 300");
        assertEquals("stuck", w.end());
        assertTrue(w.ms() >= 900 && w.ms() < 10_000, w.ms() + " ms");
    }

    @Test
    void aProbeThatAnswersIsReapedWithItsVerdict() throws Exception {
        Wait w = run("plain", 30_000, 5000, "exit 10");
        assertEquals(new Wait("exited", "exit 10", w.ms()), w);
    }

    /** criu told to stop (its signal blocked while the shim waits) does not wait out the probe's time-out. */
    @Test
    void aStopSignalForCriuEndsTheWaitAtOnce() throws Exception {
        Wait w = run("interrupted", 60_000, 5000, "exec sleep 300");
        assertEquals("interrupted", w.end());
        assertTrue(w.ms() < 30_000, w.ms() + " ms");
    }
}

package dev.criugpu.api;

import dev.criugpu.api.bindings.signal_h;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A process started the way the CUDA watchdog is: not our child, a session of its own, signals reset, two pipes. */
class DetachedProcessTest {
    static String[] stat(long pid) throws IOException {
        String s = Files.readString(Path.of("/proc/" + pid + "/stat"));
        return s.substring(s.lastIndexOf(')') + 2).split(" ");
    }

    static String status(long pid, String key) throws IOException {
        return Files.readAllLines(Path.of("/proc/" + pid + "/status")).stream().filter(l -> l.startsWith(key + ":"))
                .findFirst().orElseThrow().substring(key.length() + 1).trim();
    }

    @Test
    void itIsNotOurChildHasItsOwnSessionAndNoBlockedSignals() throws Throwable {
        DetachedProcess p;
        // the caller blocks SIGTERM, as every thread inside criu's JVM does: the process must not inherit that
        try (ThreadSignals blocked = new ThreadSignals(signal_h.SIGTERM)) {
            p = DetachedProcess.start(List.of("/bin/sh", "-c", "echo pid $$; read line; echo \"got $line\""));
        }
        try {
            String first = p.readLine(10_000).orElseThrow();
            assertTrue(first.startsWith("pid "), first);
            long pid = Long.parseLong(first.substring(4));
            String[] f = stat(pid);
            long ppid = Long.parseLong(f[1]), session = Long.parseLong(f[3]);
            assertNotEquals(ProcessHandle.current().pid(), ppid, "it is our child");
            assertNotEquals(Long.parseLong(stat(ProcessHandle.current().pid())[3]), session, "it shares our session");
            assertEquals("0000000000000000", status(pid, "SigBlk"));
            p.writeLine("hello");
            assertEquals(Optional.of("got hello"), p.readLine(10_000));
            IOException end = assertThrows(IOException.class, () -> p.readLine(10_000));
            assertEquals("it exited", end.getMessage());
        } finally {
            p.close();
        }
    }

    @Test
    void aProgramThatCannotRunIsReportedWithWhatTheShellSaid() throws Exception {
        try (DetachedProcess p = DetachedProcess.start(List.of("/nonexistent/java", "-version"))) {
            String said = p.readLine(10_000).orElseThrow();
            assertTrue(said.contains("/nonexistent/java") && said.contains("not found"), said);
            IOException e = assertThrows(IOException.class, () -> p.readLine(10_000));
            assertEquals("it exited", e.getMessage());
            assertThrows(IOException.class, () -> p.writeLine("anyone?"));
        }
    }

    @Test
    void aRelativeProgramIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> DetachedProcess.start(List.of("java")));
    }
}

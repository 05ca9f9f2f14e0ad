package dev.criugpu.api.sys;

import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcStatTest {
    @Test
    void statWithAWickedCommandName() {
        String line = "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 "
                + "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
        ProcStat s = ProcStat.parse(line);
        assertEquals('S', s.state());
        assertEquals(987654, s.startTime());
        assertTrue(s.alive());
        assertFalse(ProcStat.parse(line.replace(") S 1", ") Z 1")).alive());
        assertThrows(IllegalArgumentException.class, () -> ProcStat.parse("4242 (cut"));
        assertThrows(IllegalArgumentException.class, () -> ProcStat.parse("4242 (a) S 1 2"));
    }

    @Test
    void aChildIsAliveUntilItEnds() throws Exception {
        Process p = new ProcessBuilder("sleep", "60").start();
        long pid = p.pid();
        long start = ProcStat.of(pid).orElseThrow().startTime();
        assertTrue(ProcStat.alive(pid));
        assertTrue(ProcStat.alive(pid, start));
        assertFalse(ProcStat.alive(pid, start + 1), "another process under the same pid");
        p.destroyForcibly().waitFor();
        assertFalse(ProcStat.alive(pid));
    }

    /**
     * A zombie nobody reaps — the case of a container whose init waits for nothing — has ended: the shell forks a
     * child that exits once the shell has become {@code sleep}, which never waits for it.
     */
    @Test
    void aZombieThatNobodyReapsHasEnded() throws Exception {
        Process parent = new ProcessBuilder("/bin/sh", "-c",
                // the child ends once its parent is sleep (a shell might reap it before its exec)
                "(while [ \"$(cat /proc/$$/comm)\" != sleep ]; do :; done) & echo $!; exec sleep 60").start();
        try {
            long zombie = Long.parseLong(new BufferedReader(new InputStreamReader(parent.getInputStream())).readLine().strip());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (ProcStat.of(zombie).map(s -> s.state() != 'Z').orElse(true)) {
                assertTrue(System.nanoTime() < deadline, "pid " + zombie + " never became a zombie: " + ProcStat.of(zombie));
                Thread.sleep(5);
            }
            assertFalse(ProcStat.alive(zombie));
            assertFalse(ProcStat.alive(zombie, ProcStat.of(zombie).orElseThrow().startTime()));
        } finally {
            parent.destroyForcibly().waitFor();
        }
    }
}

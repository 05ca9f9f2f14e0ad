package dev.criugpu.cuda.proc;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProcsTest {
    @Test
    void statWithAWickedCommandName() {
        String line = "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 "
                + "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
        Procs.Stat s = Procs.parseStat(line);
        assertEquals('S', s.state());
        assertEquals(987654, s.startTime());
        assertTrue(s.alive());
        assertFalse(Procs.parseStat(line.replace(") S 1", ") Z 1")).alive());
    }

    @Test
    void aChildIsAliveUntilReaped() throws Exception {
        Process p = new ProcessBuilder("sleep", "60").start();
        int pid = (int) p.pid();
        assertTrue(Procs.alive(pid));
        assertTrue(Procs.stat(pid).orElseThrow().startTime() > 0);
        p.destroyForcibly().waitFor();
        assertFalse(Procs.alive(pid));
    }
}

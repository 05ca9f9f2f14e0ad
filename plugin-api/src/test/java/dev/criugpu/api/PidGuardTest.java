package dev.criugpu.api;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PidGuardTest {
    @Test
    void ownTidsIncludeThisThreadsTid() throws Exception {
        Set<Integer> tids = PidGuard.ownTids();
        int pid = (int) ProcessHandle.current().pid();
        assertTrue(tids.contains(pid), "the main thread's tid is the pid");
        assertTrue(tids.size() > 1, "a JVM runs several threads");
    }

    @Test
    void collisionNamesTheIds() {
        CriuException e = assertThrows(CriuException.class,
                () -> PidGuard.requireDisjoint(List.of(5, 77, 78), List.of(78, 1, 77)));
        assertEquals(Errno.EBUSY, e.errno());
        assertTrue(e.getMessage().startsWith("JVM threads hold ids [77, 78]"), e.getMessage());
        assertDoesNotThrow(() -> PidGuard.requireDisjoint(List.of(5, 6), List.of(7)));
    }
}

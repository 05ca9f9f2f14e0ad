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

    @Test
    void parkingLeavesTheTopWhenTheImageHasNoIdsThere() {
        assertEquals(32768 - 1 - 1024, PidGuard.parkingPoint(List.of(400, 16000), 32768, 1024));
    }

    @Test
    void parkingGoesBelowImageIdsThatLieAtTheTop() {
        // the measured case: a DataLoader's thread at 31784 where the JVM used to park (32768 - 1024 = 31744)
        long at = PidGuard.parkingPoint(List.of(19008, 31784, 31790), 32768, 1024);
        assertEquals(31784 - 1 - 1024, at);
        assertTrue(List.of(19008, 31784, 31790).stream().noneMatch(id -> id > at && id <= at + 1024));
    }

    @Test
    void whereNoGapIsWideEnoughTheWidestIsTaken() {
        List<Integer> ids = new java.util.ArrayList<>();
        for (int id = 300; id < 4096; id += 100) ids.add(id);
        ids.add(2050); // the gap 1900..2000 stays the widest (99 free) beside 2000..2050 and 2050..2100
        ids.remove(Integer.valueOf(2000));
        assertEquals(1900, PidGuard.parkingPoint(ids, 4096, 1024));
        assertEquals(4096 - 1 - 50, PidGuard.parkingPoint(ids, 4096, 50), "the highest gap that fits wins");
    }

    @Test
    void idsOutsideTheRangeAreIgnored() {
        assertEquals(4096 - 1 - 1024, PidGuard.parkingPoint(List.of(1, 200, 5000, 4_000_000), 4096, 1024));
    }
}

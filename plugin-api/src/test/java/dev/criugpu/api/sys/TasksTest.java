package dev.criugpu.api.sys;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TasksTest {
    @Test
    void innermostPidIsTheLastNsPidField() {
        assertEquals(7, Tasks.innermostPid("Name:\tx\nNSpid:\t4242\t7\nNSpgid:\t1\n").orElseThrow());
        assertEquals(4242, Tasks.innermostPid("NSpid:\t4242\n").orElseThrow());
        assertTrue(Tasks.innermostPid("Name:\tx\n").isEmpty());
        assertTrue(Tasks.innermostPid("NSpid:\tgarbage\n").isEmpty());
    }

    @Test
    void aLiveTaskInThisNamespaceIsItsOwnPidAndAGoneOneFallsBack() {
        int self = (int) ProcessHandle.current().pid();
        assertEquals(self, Tasks.innermostPid(self));
        assertEquals(Integer.MAX_VALUE, Tasks.innermostPid(Integer.MAX_VALUE));
    }
}

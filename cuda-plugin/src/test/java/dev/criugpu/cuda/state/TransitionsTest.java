package dev.criugpu.cuda.state;

import org.junit.jupiter.api.Test;

import java.util.List;

import static dev.criugpu.cuda.state.CudaAction.RESTORE;
import static dev.criugpu.cuda.state.CudaAction.UNLOCK;
import static dev.criugpu.cuda.state.CudaState.CHECKPOINTED;
import static dev.criugpu.cuda.state.CudaState.FAILED;
import static dev.criugpu.cuda.state.CudaState.LOCKED;
import static dev.criugpu.cuda.state.CudaState.RUNNING;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TransitionsTest {
    @Test
    void returningToTheUsersState() {
        assertEquals(List.of(RESTORE, UNLOCK), Transitions.returnSteps(RUNNING, CHECKPOINTED));
        assertEquals(List.of(RESTORE), Transitions.returnSteps(LOCKED, CHECKPOINTED));
        assertEquals(List.of(), Transitions.returnSteps(CHECKPOINTED, CHECKPOINTED));
        assertEquals(List.of(UNLOCK), Transitions.returnSteps(RUNNING, LOCKED));
        assertEquals(List.of(), Transitions.returnSteps(RUNNING, RUNNING));
    }

    @Test
    void impossibleReturnsAreRefused() {
        assertThrows(IllegalStateException.class, () -> Transitions.returnSteps(CHECKPOINTED, RUNNING));
        assertThrows(IllegalStateException.class, () -> Transitions.returnSteps(LOCKED, RUNNING));
        assertThrows(IllegalStateException.class, () -> Transitions.returnSteps(RUNNING, FAILED));
    }

    @Test
    void whatTheDumpDoesPerInitialState() {
        assertTrue(Transitions.needsLock(RUNNING));
        assertFalse(Transitions.needsLock(LOCKED));
        assertFalse(Transitions.needsLock(CHECKPOINTED));
        assertTrue(Transitions.needsCheckpoint(RUNNING));
        assertTrue(Transitions.needsCheckpoint(LOCKED));
        assertFalse(Transitions.needsCheckpoint(CHECKPOINTED));
    }

    @Test
    void dumpEnding() {
        assertEquals(DumpEnding.NOTHING, DumpEnding.decide(1, false, true));
        assertEquals(DumpEnding.RESTORE_NOW, DumpEnding.decide(-1, true, false));
        assertEquals(DumpEnding.RESTORE_NOW, DumpEnding.decide(0, true, true));
        assertEquals(DumpEnding.AGENT_WATCHES, DumpEnding.decide(0, true, false));
    }

    @Test
    void stateWords() {
        assertEquals(CHECKPOINTED, CudaState.ofWord("checkpointed\n").orElseThrow());
        assertEquals("locked", LOCKED.word());
        assertTrue(CudaState.ofValue(7).isEmpty());
    }
}

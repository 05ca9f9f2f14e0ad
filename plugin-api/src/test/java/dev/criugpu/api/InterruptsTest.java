package dev.criugpu.api;

import dev.criugpu.api.bindings.signal_h;
import org.junit.jupiter.api.Test;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A hook's long wait, with criu's SIGINT/SIGTERM blocked on the waiting thread as the shim has them: a real signal
 * sent to that thread ends the wait within a slice, with the line criu's log shows.
 */
class InterruptsTest {
    @Test
    void aPendingSigtermEndsTheWait() throws Throwable {
        CompletableFuture<Void> never = new CompletableFuture<>();
        try (ThreadSignals s = new ThreadSignals(signal_h.SIGTERM)) {
            assertEquals(Optional.empty(), Interrupts.pendingStop());
            s.raiseHere();
            assertEquals(Optional.of("SIGTERM"), Interrupts.pendingStop());
            long t0 = System.nanoTime();
            CriuException e = assertThrows(CriuException.class, () -> Interrupts.await(never, "the CUDA lock of pid 42"));
            assertTrue((System.nanoTime() - t0) / 1_000_000 < 1000, "gave up only after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
            assertEquals(Errno.EINTR, e.errno());
            assertEquals("criu received SIGTERM while waiting for the CUDA lock of pid 42; stopped waiting so that criu can end",
                    e.getMessage());
        }
        assertEquals(Optional.empty(), Interrupts.pendingStop());
    }

    @Test
    void withoutASignalTheWaitEndsWithTheWork() throws Exception {
        CompletableFuture<String> later = CompletableFuture.supplyAsync(() -> "done",
                CompletableFuture.delayedExecutor(3 * Interrupts.SLICE_MS, java.util.concurrent.TimeUnit.MILLISECONDS));
        assertEquals("done", Interrupts.await(later, "work"));
    }

    @Test
    void aSignalThatIsNotAStopSignalDoesNotEndTheWait() throws Throwable {
        try (ThreadSignals s = new ThreadSignals(10 /* SIGUSR1 */)) {
            s.raiseHere();
            assertEquals(Optional.empty(), Interrupts.pendingStop());
        }
    }
}

package dev.criugpu.cuda;

import dev.criugpu.cuda.agent.WatchdogLink;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.ptrace.RestoreThreadControl;

import java.util.List;
import java.util.function.Supplier;

/**
 * What a dump or restore session works through: the driver (in a dump: through the CUDA agent), the restore-thread
 * wake/re-stop, what answers for a dump's tasks if criu goes away, the backend criu's own JVM opens when the agent
 * died during the dump and tasks must go back, and a second agent that only watches, started at criu's exit when the
 * first died and criu may yet resume the tree (both asked only then). Tests pass stand-ins for all five.
 */
record CudaDeps(CudaBackend backend, RestoreThreadControl threads, WatchdogLink watchdog, Supplier<BackendSelection> fallback,
                Supplier<WatchdogLink> secondWatch) {
    /** The driver is in criu's JVM already: nothing else to fall back on, nothing watches. */
    static CudaDeps inCriu(CudaBackend backend, RestoreThreadControl threads) {
        return new CudaDeps(backend, threads, WatchdogLink.NONE, () -> new BackendSelection(backend, "the same backend", List.of()),
                () -> WatchdogLink.NONE);
    }
}

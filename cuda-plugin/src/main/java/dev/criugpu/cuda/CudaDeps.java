package dev.criugpu.cuda;

import dev.criugpu.cuda.agent.AgentLink;
import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.sys.RestoreThreadControl;

import java.util.List;
import java.util.function.Supplier;

/**
 * What a dump or restore session works through: the driver (in a dump: through the CUDA agent), the restore-thread
 * wake/re-stop, the agent's watch over a dump's tasks if criu goes away (the same {@link dev.criugpu.cuda.agent.AgentClient}
 * as the driver when the agent runs), the backend criu's own JVM opens when the agent
 * died during the dump and tasks must go back, and a second agent that only watches, started at criu's exit when the
 * first died and criu may yet resume the tree (both asked only then). Tests pass stand-ins for all five.
 */
record CudaDeps(CudaBackend backend, RestoreThreadControl threads, AgentLink agent, Supplier<BackendSelection> fallback,
                Supplier<AgentLink> secondAgent) {
    /** The driver is in criu's JVM already ({@code CRIU_CUDA_GUARD=0}): nothing else to fall back on, no agent watches. */
    static CudaDeps inCriu(CudaBackend backend, RestoreThreadControl threads) {
        return new CudaDeps(backend, threads, AgentLink.NONE, () -> new BackendSelection(backend, "the same backend", List.of()),
                () -> AgentLink.NONE);
    }
}

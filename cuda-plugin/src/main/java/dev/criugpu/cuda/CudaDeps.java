package dev.criugpu.cuda;

import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.agent.WatchdogLink;
import dev.criugpu.cuda.ptrace.RestoreThreadControl;

/**
 * What a dump or restore session works through: the driver (in a dump: through the CUDA agent), the restore-thread
 * wake/re-stop, and what answers for a dump's tasks if criu goes away. Tests pass stand-ins for all three.
 */
record CudaDeps(CudaBackend backend, RestoreThreadControl threads, WatchdogLink watchdog) {
}

package dev.criugpu.cuda;

import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.guard.WatchdogLink;
import dev.criugpu.cuda.ptrace.RestoreThreadControl;

/**
 * What a dump or restore session works through: the driver (or cuda-checkpoint), the restore-thread wake/re-stop,
 * and the watchdog a dump starts at its first CUDA task. Tests pass stand-ins for all three.
 */
record CudaDeps(CudaBackend backend, RestoreThreadControl threads, WatchdogLink.Starter watchdogs) {
}

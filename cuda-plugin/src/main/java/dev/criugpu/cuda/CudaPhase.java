package dev.criugpu.cuda;

import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.cuda.config.CriuCommandLine;
import dev.criugpu.cuda.inherited.InheritedDevices;
import dev.criugpu.cuda.job.CommRelease;

import java.util.Optional;

/** What the CUDA plugin holds between criu's hooks: one value, replaced as the command moves on. */
sealed interface CudaPhase {
    /** Nothing to do: before prepare, after exit, or disabled for this command. */
    record Idle() implements CudaPhase {
    }

    /** Between prepare and init: a dump's CUDA agent on its way up, or a restore's early questions. */
    record Prepared(Optional<AgentStart> agent, Optional<RestoreProbes> probes) implements CudaPhase {
    }

    /**
     * A dump's hooks: its session, the inherited device files it takes, criu's options that decide the ending, the NCCL
     * ranks that released their communicators for it.
     */
    record Dumping(DumpSession session, Optional<InheritedDevices> inherited, CriuCommandLine commandLine,
                   CommRelease release)
            implements CudaPhase {
    }

    /** A restore's hooks: its session and the stand-ins criu's children run for inherited device files. */
    record Restoring(RestoreSession session, Optional<ChildPlan> childPlan) implements CudaPhase {
    }

    CudaPhase IDLE = new Idle();
}

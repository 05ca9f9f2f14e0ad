package dev.criugpu.cuda.inherited;

import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.cuda.image.CudaInheritedEntry;
import dev.criugpu.cuda.image.CudaInheritedFile;

/**
 * What restored tasks get in place of inherited NVIDIA device references ({@link InheritedDevices}), run by the
 * shim's executor in criu's forked children (no Java there): each recorded file becomes {@code /dev/null} with the
 * same access mode at the same fd number (criu places it), and each {@code /dev/nvidia*} mapping becomes a shared
 * mapping of {@code /dev/zero} at the same address, so that nothing else lands in the range. A task that calls CUDA
 * after all gets CUDA's own error for a forked child (CUDA refuses to run in a child of an initialised process);
 * nothing reaches the GPU, and the restore itself does not depend on it.
 */
public final class InheritedPlan {
    static final String FILE_STAND_IN = "/dev/null";
    static final String MAPPING_STAND_IN = "/dev/zero";
    private static final int O_CLOEXEC = 02000000;

    private InheritedPlan() {
    }

    /** Adds the programs and the path rule for {@code entry} to {@code plan}. */
    public static void addTo(ChildPlan plan, CudaInheritedEntry entry) {
        for (CudaInheritedFile f : entry.getFilesList()) {
            int slot = plan.newSlot();
            plan.program(f.getId())
                    .open(slot, FILE_STAND_IN, f.getFlags() | O_CLOEXEC, false)
                    .handOver(slot, "the stand-in for " + f.getPath());
        }
        if (entry.getMappings()) plan.substitutePath(InheritedDevices.PREFIX, true, MAPPING_STAND_IN);
    }
}

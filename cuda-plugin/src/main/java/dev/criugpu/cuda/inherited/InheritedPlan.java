package dev.criugpu.cuda.inherited;

import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.cuda.image.CudaInheritedEntry;
import dev.criugpu.cuda.image.CudaInheritedFile;

import java.util.Optional;

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
    private static final int O_ACCMODE = 03;
    private static final int O_NONBLOCK = 04000;
    private static final int O_CLOEXEC = 02000000;

    private InheritedPlan() {
    }

    /**
     * The flags a stand-in for {@code f} is opened with: its access mode and O_NONBLOCK; empty when the record holds
     * anything else (O_CREAT, O_TRUNC, ... or the invalid access mode 3), which no dump of ours writes.
     */
    static Optional<Integer> openFlags(CudaInheritedFile f) {
        int flags = f.getFlags();
        if ((flags & ~(O_ACCMODE | O_NONBLOCK)) != 0 || (flags & O_ACCMODE) == O_ACCMODE) return Optional.empty();
        return Optional.of(flags);
    }

    /**
     * Adds the programs and the path rule for {@code entry} ({@link InheritedDevices#read}, which refuses records
     * with other flags) to {@code plan}.
     */
    public static void addTo(ChildPlan plan, CudaInheritedEntry entry) {
        for (CudaInheritedFile f : entry.getFilesList()) {
            int flags = openFlags(f).orElseThrow(() -> new IllegalArgumentException("file id " + f.getId()
                    + ": open flags 0" + Integer.toOctalString(f.getFlags()) + " are not an access mode with at most O_NONBLOCK"));
            int slot = plan.newSlot();
            plan.program(f.getId())
                    .open(slot, FILE_STAND_IN, flags | O_CLOEXEC, false)
                    .handOver(slot, "the stand-in for " + f.getPath());
        }
        if (entry.getMappings()) plan.substitutePath(InheritedDevices.PREFIX, true, MAPPING_STAND_IN);
    }
}

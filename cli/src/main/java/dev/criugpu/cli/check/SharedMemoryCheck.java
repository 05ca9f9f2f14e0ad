package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.Mapping;
import dev.criugpu.cli.check.ProcFs.Task;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.criugpu.cli.check.ProcPaths.inShm;
import static dev.criugpu.cli.check.ProcPaths.strip;
import static dev.criugpu.cli.check.Words.pids;

/**
 * Shared memory (/dev/shm, memfd, SysV) mapped by two or more NVIDIA holders that fork alone does not explain: a hint
 * of CUDA IPC, which the driver cannot restore. Inherited memory sits at the same address in a task and an ancestor.
 */
final class SharedMemoryCheck implements Check {
    @Override
    public void run(JobTree tree, Findings out) {
        List<Task> holders = tree.nvidiaHolders();
        if (holders.size() < 2) return;
        Map<String, Map<Integer, Mapping>> byFile = new LinkedHashMap<>();
        for (Task t : holders) {
            for (Mapping m : t.maps()) {
                String p = m.path();
                if (!m.shared() || !(inShm(p) || p.startsWith("/memfd:") || p.startsWith("/SYSV"))) continue;
                byFile.computeIfAbsent(m.dev() + ":" + m.inode(), k -> new LinkedHashMap<>()).putIfAbsent(t.pid(), m);
            }
        }
        for (Map<Integer, Mapping> users : byFile.values()) {
            List<Integer> independent = users.keySet().stream().filter(p -> !inherited(tree, p, users)).toList();
            if (independent.size() < 2) continue;
            Mapping any = users.values().iterator().next();
            out.add(Kind.NOTE, "ipc", pids(independent) + " (all holding NVIDIA files) map the same shared memory "
                    + strip(any.path()) + ", not inherited through fork(): a hint that they may share device memory too "
                    + "(CUDA IPC: NCCL's P2P transport, torch.multiprocessing's CUDA tensors), which the driver cannot "
                    + "restore (NCCL's SHM transport on such files, NCCL_CUMEM_HOST_ENABLE=0, was measured to restore)");
        }
    }

    /** Whether {@code pid} got its mapping of the file through fork(): an ancestor maps it at the same address. */
    private static boolean inherited(JobTree tree, int pid, Map<Integer, Mapping> users) {
        long start = users.get(pid).start();
        return users.entrySet().stream().anyMatch(e -> e.getKey() != pid && e.getValue().start() == start
                && tree.ancestor(e.getKey(), pid));
    }
}

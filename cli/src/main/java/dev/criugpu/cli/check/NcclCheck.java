package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.Mapping;
import dev.criugpu.cli.check.ProcFs.Task;
import dev.criugpu.cuda.job.CommRelease;
import dev.criugpu.cuda.job.NcclTransports;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Collectors;

import static dev.criugpu.cli.check.Words.pids;

/**
 * NCCL's settings in the environment of the NVIDIA holders that are ranks ({@link NcclTransports.Rank#usesNccl}, not
 * fork()ed workers): two or more ranks
 * that may use the P2P transport, or the SHM transport on cuMem host memory, cannot be restored ({@link NcclTransports}: the same rule the dump refuses by).
 */
final class NcclCheck implements Check {
    /** NCCL settings reported (the multi-process setup measured to dump and restore). */
    static final List<String> NCCL_SETTINGS = List.of("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_CUMEM_HOST_ENABLE",
            "NCCL_CUMEM_ENABLE", "NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME", "NCCL_NVLS_ENABLE");

    @Override
    public void run(JobTree tree, Findings out) {
        Map<Integer, NcclTransports.Rank> known = new LinkedHashMap<>();
        for (Task t : tree.nvidiaHolders()) known.put(t.pid(), rank(tree, t));
        List<Task> withNccl = tree.nvidiaHolders().stream().filter(t -> known.get(t.pid()).usesNccl()).toList();
        List<Task> ranks = withNccl.stream().filter(t -> !forkOfParent(tree, t)).toList();
        List<Integer> forks = withNccl.stream().filter(t -> forkOfParent(tree, t)).map(Task::pid).toList();
        if (ranks.isEmpty()) return;
        if (!forks.isEmpty()) {
            out.add(Kind.NOTE, "nccl", pids(forks) + ": fork()ed from a parent without an exec since (DataLoader "
                    + "workers, say), not counted as NCCL ranks");
        }
        Map<String, List<Integer>> bySettings = new LinkedHashMap<>();
        for (Task r : ranks) {
            String s = NCCL_SETTINGS.stream().map(k -> k + "=" + Objects.requireNonNullElse(r.env().get(k), "(unset)"))
                    .collect(Collectors.joining(" "));
            bySettings.computeIfAbsent(s, k -> new ArrayList<>()).add(r.pid());
        }
        bySettings.forEach((s, group) -> out.add(Kind.NOTE, "nccl", "NCCL settings of " + pids(group) + ": " + s
                + " (/proc/PID/environ: the environment at exec; what the program sets itself later is not seen)"));
        List<NcclTransports.Rank> rankInfo = ranks.stream().map(t -> known.get(t.pid())).toList();
        List<NcclTransports.Blocker> blockers = NcclTransports.blockers(rankInfo);
        boolean released = !blockers.isEmpty() && ranks.stream().allMatch(t -> CommRelease.optedIn(tree.proc.root(), t.pid()));
        if (released) {
            out.add(Kind.NOTE, "nccl", pids(ranks.stream().map(Task::pid).toList()) + " keep NCCL's P2P/SHM transports "
                    + "on and use criu_gpu: they release their communicators when `criu dump -t PID` starts and make "
                    + "them again after it (not under criu's RPC, where the tree is not known before criu freezes it)");
        } else {
            for (NcclTransports.Blocker b : blockers) out.add(Kind.PROBLEM, "nccl", b.line());
        }
        List<Integer> onSockets = ranks.stream().filter(t -> "1".equals(t.env().get("NCCL_SHM_DISABLE"))
                && "1".equals(t.env().get("NCCL_P2P_DISABLE"))).map(Task::pid).toList();
        if (blockers.isEmpty() && !onSockets.isEmpty()) {
            out.add(Kind.NOTE, "nccl", pids(onSockets) + " run NCCL's socket transport (NCCL_P2P_DISABLE=1 "
                    + "NCCL_SHM_DISABLE=1): checkpointable, but measured at 24 % of the defaults' step rate on 4 NVLink "
                    + "GPUs; " + NcclTransports.FASTEST + " instead of NCCL_SHM_DISABLE=1 (NCCL's SHM transport over "
                    + "/dev/shm) was measured to dump and restore at 98 %");
        }
        List<Integer> nvls = NcclTransports.multicast(rankInfo);
        if (!nvls.isEmpty()) {
            out.add(Kind.NOTE, "nccl", "NCCL_NVLS_ENABLE is not 0 in " + pids(nvls) + ": on GPUs linked by NVSwitch "
                    + "NCCL uses NVLink SHARP multicast memory, never tried with a checkpoint here; set "
                    + "NCCL_NVLS_ENABLE=0");
        }
    }

    private static NcclTransports.Rank rank(JobTree tree, Task t) {
        return new NcclTransports.Rank(t.pid(), t.env(), t.maps().stream().anyMatch(m -> NcclTransports.ncclLibrary(m.path())),
                t.maps().stream().anyMatch(m -> NcclTransports.torchLibrary(m.path())),
                NcclTransports.threadNames(tree.proc.root().resolve(Integer.toString(t.pid()))));
    }

    /**
     * Whether {@code t} is its parent fork()ed without an exec since (a DataLoader worker, say): the vDSO sits where
     * the parent's does. exec places it anew (at random unless address randomization is off).
     */
    private static boolean forkOfParent(JobTree tree, Task t) {
        Task parent = tree.task(t.ppid());
        if (parent == null) return false;
        Optional<Long> mine = vdso(t), theirs = vdso(parent);
        return mine.isPresent() && mine.equals(theirs);
    }

    private static Optional<Long> vdso(Task t) {
        return t.maps().stream().filter(m -> m.path().equals("[vdso]")).map(Mapping::start).findFirst();
    }
}

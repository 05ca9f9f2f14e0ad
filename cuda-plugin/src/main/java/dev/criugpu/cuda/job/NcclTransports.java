package dev.criugpu.cuda.job;

import dev.criugpu.api.sys.ProcEntries;
import dev.criugpu.api.sys.ProcLines;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Which NCCL transports a job's ranks may connect through, and which of them the driver can checkpoint but not put
 * back: the one copy of that knowledge, used by the dump (before its first lock) and by {@code criu-gpu check}.
 *
 * <p>Measured on 4 × H100 (NV18 all-to-all, driver 580.159.04, NCCL 2.28.9 inside PyTorch 2.11), a 4-rank DDP job,
 * {@code criu dump -R} with this check skipped (issue 44; BENCHMARKS "NCCL transports"): every transport the driver
 * locks and checkpoints; what it cannot do is return the ranks when
 * <ul>
 * <li>a rank maps another GPU's memory (NCCL's P2P transport, NVLink): through cuMem handles (NCCL's default, also with
 * {@code NCCL_P2P_USE_CUDA_MEMCPY=1}) the return fails with CUDA error 801 and returning the ranks one at a time in
 * rank order then fails with 304; through legacy CUDA IPC ({@code NCCL_CUMEM_ENABLE=0}) with CUDA error 1;</li>
 * <li>ranks share host memory that NCCL allocates through cuMem ({@code NCCL_CUMEM_HOST_ENABLE}'s default, the SHM
 * transport's buffers): CUDA error 801.</li>
 * </ul>
 * The SHM transport on POSIX shared memory registered with CUDA ({@code NCCL_CUMEM_HOST_ENABLE=0}, or no cuMem at all
 * with {@code NCCL_CUMEM_ENABLE=0}) dumps with {@code -R} and restores: with P2P off it ran at 98 % of the defaults'
 * step rate, the socket transport at 24 %. /proc shows nothing of the P2P connection (no /dev/shm file, no mapping of
 * the peer GPU's device file): the ranks' environment is the only signal, read at exec ({@code /proc/PID/environ}); a
 * setting the program makes later is not seen, which is what {@code CRIU_CUDA_NCCL_CHECK=0} is for. Which processes are
 * ranks is decided by what they run, never by their environment alone: hosts and container images set NCCL_* for
 * every process (the 4 × H200 hosts set NCCL_NVLS_ENABLE=0 host-wide, NVIDIA's images NCCL_VERSION), and a
 * multi-process CUDA program without NCCL on such a host was refused (GPU e2e, session 13). A rank is a PyTorch
 * process with a ProcessGroupNCCL (its {@code pt_nccl_*} threads) or a process outside PyTorch with libnccl mapped; a
 * PyTorch process maps libnccl as soon as it imports torch, NCCL used or not, so for it only the threads count. A
 * program with NCCL linked in statically outside PyTorch is not recognised.
 */
public final class NcclTransports {
    private static final Logger log = LoggerFactory.getLogger(NcclTransports.class);
    /** The fastest settings with which a multi-process NCCL job was measured to dump and restore on one host. */
    public static final String FASTEST = "NCCL_P2P_DISABLE=1 NCCL_CUMEM_HOST_ENABLE=0";

    /** How a PyTorch DDP job keeps NCCL's defaults and is still dumped ({@link CommRelease}). */
    public static final String RELEASE_HINT = "criu_gpu.checkpointable(ddp) in the job (the plugin dir's python/criu_gpu) "
            + "and `criu dump -t PID`: the ranks release their communicators for the dump";

    private NcclTransports() {
    }

    /** What is known of one process: its environment at exec, whether libnccl and PyTorch are mapped, its threads' names. */
    public record Rank(int pid, Map<String, String> env, boolean ncclMapped, boolean torchMapped, Set<String> threadNames) {
        public Rank {
            env = Map.copyOf(env);
            threadNames = Set.copyOf(threadNames);
        }

        /** Whether it is an NCCL rank: PyTorch's NCCL threads, or libnccl mapped outside PyTorch. */
        public boolean usesNccl() {
            return threadNames.stream().anyMatch(t -> t.startsWith("pt_nccl")) || (ncclMapped && !torchMapped);
        }

        /** From {@code proc} (normally /proc); a process that is gone or unreadable reads as one without NCCL. */
        public static Rank read(Path proc, int pid) {
            Path dir = proc.resolve(Integer.toString(pid));
            MappedLibraries libraries = MappedLibraries.read(dir.resolve("maps"));
            return new Rank(pid, environ(dir.resolve("environ")), libraries.nccl, libraries.torch,
                    NcclTransports.threadNames(dir));
        }
    }

    /** A transport that stops a dump, the ranks that may use it, and what to change. */
    public record Blocker(String transport, List<Integer> pids, String setting, String why) {
        /** One line naming the pids, the transport and the setting. */
        public String line() {
            return "NCCL ranks " + pids.stream().map(p -> "pid " + p).collect(Collectors.joining(", "))
                    + " may connect through NCCL's " + transport + " transport (" + why + "): " + setting
                    + " is not set in their environment; start the job with " + FASTEST + " (NCCL's SHM transport over "
                    + "/dev/shm: measured to dump and restore, at 98 % of the defaults' step rate on 4 NVLink GPUs), or "
                    + "keep P2P on with " + RELEASE_HINT;
        }
    }

    /**
     * The transports that stop a dump of these processes (those of one job that hold CUDA state, or all its NVIDIA
     * holders for the check): none unless two or more of them use NCCL.
     */
    public static List<Blocker> blockers(List<Rank> processes) {
        List<Rank> ranks = processes.stream().filter(Rank::usesNccl).toList();
        List<Blocker> out = new ArrayList<>();
        if (ranks.size() < 2) return out;
        List<Integer> p2p = ranks.stream().filter(r -> !is(r, "NCCL_P2P_DISABLE", "1") && !is(r, "NCCL_P2P_LEVEL", "LOC"))
                .map(Rank::pid).toList();
        if (!p2p.isEmpty()) {
            out.add(new Blocker("P2P", p2p, "NCCL_P2P_DISABLE=1", "CUDA memory of one GPU mapped by another rank; the "
                    + "driver checkpoints it but cannot return it: CUDA error 801 through cuMem handles, 1 through "
                    + "legacy CUDA IPC, the ranks stay checkpointed"));
        }
        List<Integer> shm = ranks.stream().filter(r -> !is(r, "NCCL_SHM_DISABLE", "1")
                && !is(r, "NCCL_CUMEM_HOST_ENABLE", "0") && !is(r, "NCCL_CUMEM_ENABLE", "0")).map(Rank::pid).toList();
        if (!shm.isEmpty()) {
            out.add(new Blocker("SHM", shm, "NCCL_CUMEM_HOST_ENABLE=0", "host memory NCCL allocates through cuMem and "
                    + "shares between ranks; the driver checkpoints it but cannot return it: CUDA error 801"));
        }
        return out;
    }

    /** The ranks (two or more using NCCL) that may use NVLink SHARP multicast, never tried with a checkpoint. */
    public static List<Integer> multicast(List<Rank> processes) {
        List<Rank> ranks = processes.stream().filter(Rank::usesNccl).toList();
        if (ranks.size() < 2) return List.of();
        return ranks.stream().filter(r -> !is(r, "NCCL_NVLS_ENABLE", "0")).map(Rank::pid).toList();
    }

    private static boolean is(Rank r, String name, String value) {
        return value.equals(r.env().get(name));
    }

    /**
     * The environment at exec, read up to {@link ProcEntries#ENVIRON_LIMIT}: a setting past the bound counts as unset,
     * so a cut environment can only make the check refuse, never let through.
     */
    private static Map<String, String> environ(Path file) {
        try {
            ProcEntries e = ProcEntries.read(file, ProcEntries.ENVIRON_LIMIT);
            if (e.cut()) log.warn("{} is longer than {} KiB: read that far, NCCL settings after it count as unset", file,
                    ProcEntries.ENVIRON_LIMIT >> 10);
            return e.asEnvironment();
        } catch (IOException | SecurityException e) {
            return Map.of(); // gone or unreadable: nothing known
        }
    }

    /** Whether a mapped file is NCCL's library. */
    public static boolean ncclLibrary(String path) {
        return path.contains("/libnccl");
    }

    /** Whether a mapped file is PyTorch's CUDA library, which links libnccl whether the program uses NCCL or not. */
    public static boolean torchLibrary(String path) {
        return path.contains("/libtorch_cuda");
    }

    /** Whether a process maps libnccl and libtorch_cuda, from its maps read a line at a time (its owner sets the length). */
    private static final class MappedLibraries {
        boolean nccl;
        boolean torch;

        /** Neither when maps is gone or unreadable. */
        static MappedLibraries read(Path maps) {
            MappedLibraries found = new MappedLibraries();
            try {
                // ncclLibrary and torchLibrary look for part of a path, and no other field of a line holds a '/'
                ProcLines.forEach(maps, ProcLines.MAPS_LINE_LIMIT, line -> {
                    found.nccl |= ncclLibrary(line);
                    found.torch |= torchLibrary(line);
                });
            } catch (IOException | SecurityException e) {
                return new MappedLibraries();
            }
            return found;
        }
    }

    /** The names of the threads of the process at {@code procDir} (/proc/PID); empty when it has gone. */
    public static Set<String> threadNames(Path procDir) {
        Set<String> names = new HashSet<>();
        try (Stream<Path> tids = Files.list(procDir.resolve("task"))) {
            for (Path t : tids.toList()) {
                try {
                    names.add(Files.readString(t.resolve("comm")).strip());
                } catch (IOException e) {
                    // the thread ended meanwhile
                }
            }
        } catch (IOException | SecurityException e) {
            // gone
        }
        return names;
    }
}

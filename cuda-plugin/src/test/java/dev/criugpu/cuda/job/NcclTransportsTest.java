package dev.criugpu.cuda.job;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The NCCL transport rule the dump refuses by and criu-gpu check reports. */
class NcclTransportsTest {
    private static NcclTransports.Rank rank(int pid, Map<String, String> env, Set<String> threads) {
        return new NcclTransports.Rank(pid, env, false, false, threads);
    }

    private static NcclTransports.Rank mapping(int pid, Map<String, String> env, boolean nccl, boolean torch) {
        return new NcclTransports.Rank(pid, env, nccl, torch, Set.of());
    }

    @Test
    void ranksOnTheDefaultsAreBlockedByP2pAndShmNamingEachPid() {
        List<NcclTransports.Blocker> b = NcclTransports.blockers(List.of(
                rank(1, Map.of(), Set.of("pt_nccl_watchdg")), mapping(2, Map.of("NCCL_SOCKET_IFNAME", "lo"), true, false)));
        assertEquals(List.of("P2P", "SHM"), b.stream().map(NcclTransports.Blocker::transport).toList());
        assertEquals(List.of(1, 2), b.getFirst().pids());
    }

    /** Measured on 4 x H100 (issue 44): SHM over /dev/shm returns and restores, SHM on cuMem host memory does not. */
    @Test
    void shmIsBlockedOnlyOnCuMemHostMemory() {
        Map<String, String> cuMemHost = Map.of("NCCL_P2P_DISABLE", "1");
        List<NcclTransports.Blocker> b = NcclTransports.blockers(List.of(rank(1, cuMemHost, Set.of("pt_nccl_watchdg")),
                rank(2, cuMemHost, Set.of("pt_nccl_watchdg"))));
        assertEquals(List.of("SHM"), b.stream().map(NcclTransports.Blocker::transport).toList());
        assertTrue(b.getFirst().line().contains("NCCL_CUMEM_HOST_ENABLE=0 is not set"), b.getFirst().line());
        for (Map<String, String> env : List.of(Map.of("NCCL_P2P_DISABLE", "1", "NCCL_CUMEM_HOST_ENABLE", "0"),
                Map.of("NCCL_P2P_DISABLE", "1", "NCCL_CUMEM_ENABLE", "0"))) {
            assertEquals(List.of(), NcclTransports.blockers(List.of(rank(1, env, Set.of("pt_nccl_watchdg")),
                    rank(2, env, Set.of("pt_nccl_watchdg")))), env.toString());
        }
    }

    /** P2P fails through cuMem handles (801) and through legacy CUDA IPC (1): NCCL_CUMEM_ENABLE=0 does not help it. */
    @Test
    void p2pIsBlockedWhateverTheHandles() {
        Map<String, String> ipc = Map.of("NCCL_SHM_DISABLE", "1", "NCCL_CUMEM_ENABLE", "0");
        List<NcclTransports.Blocker> b = NcclTransports.blockers(List.of(rank(1, ipc, Set.of("pt_nccl_watchdg")),
                rank(2, ipc, Set.of("pt_nccl_watchdg"))));
        assertEquals(List.of("P2P"), b.stream().map(NcclTransports.Blocker::transport).toList());
        assertTrue(b.getFirst().line().contains("start the job with " + NcclTransports.FASTEST), b.getFirst().line());
    }

    @Test
    void theMeasuredSettingsBlockNothing() {
        Map<String, String> env = Map.of("NCCL_P2P_DISABLE", "1", "NCCL_SHM_DISABLE", "1", "NCCL_NVLS_ENABLE", "0");
        List<NcclTransports.Rank> ranks = List.of(rank(1, env, Set.of("pt_nccl_watchdg")), mapping(2, env, true, false));
        assertEquals(List.of(), NcclTransports.blockers(ranks));
        assertEquals(List.of(), NcclTransports.multicast(ranks));
    }

    /**
     * Hosts and images set NCCL_* for every process (NVIDIA's NCCL_VERSION; the 4 × H200 hosts NCCL_NVLS_ENABLE=0):
     * CUDA processes without NCCL are not ranks, whatever their environment (GPU e2e tree and pair, session 13).
     */
    @Test
    void anEnvironmentAloneNeverMakesARank() {
        Map<String, String> env = Map.of("NCCL_VERSION", "2.28.3-1", "NCCL_NVLS_ENABLE", "0", "NCCL_DEBUG", "WARN");
        assertEquals(List.of(), NcclTransports.blockers(List.of(rank(1, env, Set.of()), rank(2, env, Set.of()),
                rank(3, env, Set.of()))));
        assertEquals(List.of(), NcclTransports.multicast(List.of(rank(1, env, Set.of()), rank(2, env, Set.of()))));
    }

    /** Importing torch maps libnccl; only a ProcessGroupNCCL (its pt_nccl_* threads) makes a PyTorch process a rank. */
    @Test
    void pytorchProcessesWithoutAnNcclProcessGroupAreNotRanks() {
        assertEquals(List.of(), NcclTransports.blockers(List.of(mapping(1, Map.of(), true, true), mapping(2, Map.of(), true, true))));
        NcclTransports.Rank withGroup = new NcclTransports.Rank(3, Map.of(), true, true, Set.of("pt_nccl_heartbt"));
        assertEquals(List.of(3, 4), NcclTransports.blockers(List.of(withGroup, mapping(4, Map.of(), true, false)))
                .getFirst().pids());
    }

    @Test
    void oneRankAloneIsNeverBlocked() {
        assertEquals(List.of(), NcclTransports.blockers(List.of(rank(1, Map.of(), Set.of("pt_nccl_watchdg")))));
    }

    /** A user's environment of any length is read only up to the bound, and what lies past it counts as unset. */
    @Test
    void anEnvironmentPastTheBoundCanOnlyMakeTheCheckRefuse(@org.junit.jupiter.api.io.TempDir java.nio.file.Path proc)
            throws Exception {
        for (int pid : List.of(11, 12)) {
            java.nio.file.Path d = java.nio.file.Files.createDirectories(proc.resolve(pid + "/task/" + pid));
            java.nio.file.Files.writeString(d.resolve("comm"), "pt_nccl_watchdg\n");
            java.nio.file.Files.writeString(proc.resolve(pid + "/maps"), "");
            java.nio.file.Files.write(proc.resolve(pid + "/environ"), ("PAD=" + "p".repeat(2 << 20)
                    + "\0NCCL_P2P_DISABLE=1\0NCCL_CUMEM_HOST_ENABLE=0\0").getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        List<NcclTransports.Rank> ranks = List.of(NcclTransports.Rank.read(proc, 11), NcclTransports.Rank.read(proc, 12));
        assertEquals(Map.of(), ranks.getFirst().env());
        assertEquals(List.of("P2P", "SHM"), NcclTransports.blockers(ranks).stream().map(NcclTransports.Blocker::transport).toList());
    }
}

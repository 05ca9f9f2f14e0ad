package dev.criugpu.cuda.job;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The NCCL transport rule the dump refuses by and criu-gpu check reports. */
class NcclTransportsTest {
    private static NcclTransports.Rank rank(int pid, Map<String, String> env, Set<String> threads) {
        return new NcclTransports.Rank(pid, env, false, threads);
    }

    @Test
    void ranksOnTheDefaultsAreBlockedByP2pAndShmNamingEachPid() {
        List<NcclTransports.Blocker> b = NcclTransports.blockers(List.of(
                rank(1, Map.of(), Set.of("pt_nccl_watchdg")), rank(2, Map.of("NCCL_SOCKET_IFNAME", "lo"), Set.of())));
        assertEquals(List.of("P2P", "SHM"), b.stream().map(NcclTransports.Blocker::transport).toList());
        assertEquals(List.of(1, 2), b.getFirst().pids());
    }

    @Test
    void theMeasuredSettingsBlockNothing() {
        Map<String, String> env = Map.of("NCCL_P2P_DISABLE", "1", "NCCL_SHM_DISABLE", "1", "NCCL_NVLS_ENABLE", "0");
        assertEquals(List.of(), NcclTransports.blockers(List.of(rank(1, env, Set.of()), rank(2, env, Set.of()))));
        assertEquals(List.of(), NcclTransports.multicast(List.of(rank(1, env, Set.of()), rank(2, env, Set.of()))));
    }

    /** NVIDIA's images set NCCL_VERSION for every process: CUDA processes without NCCL are not ranks (GPU e2e tree). */
    @Test
    void ncclVersionAloneDoesNotMakeARank() {
        Map<String, String> env = Map.of("NCCL_VERSION", "2.28.3-1", "CUDA_VERSION", "13.0.2");
        assertEquals(List.of(), NcclTransports.blockers(List.of(rank(1, env, Set.of()), rank(2, env, Set.of()),
                rank(3, env, Set.of()))));
    }

    @Test
    void oneRankAloneIsNeverBlocked() {
        assertEquals(List.of(), NcclTransports.blockers(List.of(rank(1, Map.of(), Set.of("pt_nccl_watchdg")))));
    }
}

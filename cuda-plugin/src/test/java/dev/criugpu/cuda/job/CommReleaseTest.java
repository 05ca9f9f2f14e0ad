package dev.criugpu.cuda.job;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The dump's request to NCCL ranks that use criu_gpu, on real processes and their real channels: two Python ranks
 * (src/test/python/channel_rank.py) with a thread named as PyTorch's NCCL watchdog, so they read as ranks on NCCL's
 * defaults, each with the channel criu_gpu makes (answering as criu_gpu does, or never), none, or a descriptor that
 * only looks like one.
 */
class CommReleaseTest {
    private static final Path PROC = Path.of("/proc");
    private Process job;
    private final List<Integer> ranks = new ArrayList<>();
    private Path log;

    @TempDir
    Path dir;

    private void startJob(String firstMode, String secondMode) throws Exception {
        startJob(firstMode, secondMode, true);
    }

    private void startJob(String firstMode, String secondMode, boolean ncclThread) throws Exception {
        assumeTrue(CriuGpuPackageTest.python3(), "python3 is not installed: the channel's test cannot run");
        log = dir.resolve("job.log");
        ProcessBuilder pb = new ProcessBuilder("sh", "-c",
                "RANK_MODE=$FIRST python3 $RANK_PY & RANK_MODE=$SECOND python3 $RANK_PY & wait")
                .redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("RANK_PY", Path.of("src/test/python/channel_rank.py").toAbsolutePath().toString());
        pb.environment().put("PYTHONPATH", Path.of("src/main/python").toAbsolutePath().toString());
        pb.environment().put("FIRST", firstMode);
        pb.environment().put("SECOND", secondMode);
        pb.environment().put("NCCL_THREAD", ncclThread ? "1" : "0");
        job = pb.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (ranks.size() < 2) {
            assertTrue(System.nanoTime() < deadline, "the job's two ranks never started:\n" + out());
            ranks.clear();
            job.toHandle().children().forEach(c -> ranks.add((int) c.pid()));
            Thread.onSpinWait();
        }
        for (int r : ranks) {
            if (!ncclThread) {
                CriuGpuPackageTest.await(log, "^ready$", 2, 20);
                break;
            }
            while (!NcclTransports.threadNames(PROC.resolve(Integer.toString(r))).contains("pt_nccl_watchdg")) {
                assertTrue(System.nanoTime() < deadline, "pid " + r + " never named its NCCL thread:\n" + out());
                Thread.onSpinWait();
            }
        }
    }

    private String out() throws IOException {
        return log != null && Files.exists(log) ? Files.readString(log) : "";
    }

    private int count(String line) throws IOException {
        return out().split("(?m)^" + line + "$", -1).length - 1;
    }

    @AfterEach
    void stopJob() {
        if (job == null) return;
        job.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
        job.destroyForcibly();
    }

    @Test
    void ranksThatAnswerAreReleasedUntilTheRequestIsTakenBack() throws Exception {
        startJob("answer", "answer");
        CommRelease release = CommRelease.ask(PROC, (int) job.pid(), 10_000);
        assertEquals(ranks.stream().sorted().toList(), release.pids().stream().sorted().toList(), out());
        assertEquals(2, count("released"), out());
        assertEquals(0, count("going on"), "asked until the request is taken back:\n" + out());
        release.close();
        CriuGpuPackageTest.await(log, "^going on$", 2, 20);
    }

    @Test
    void ranksThatDoNotAnswerInTimeAreToldToGoOnAndLeftToTheCheck() throws Exception {
        startJob("silent", "silent");
        assertEquals(List.of(), CommRelease.ask(PROC, (int) job.pid(), 300).pids());
        for (int r : ranks) {
            try (RankChannel c = RankChannel.open(PROC, r).orElseThrow()) {
                assertEquals(0, c.requested(), "pid " + r + ": the request is taken back");
            }
        }
    }

    @Test
    void aRankWithoutAChannelMeansNoRankIsAsked() throws Exception {
        startJob("answer", "none");
        assertEquals(List.of(), CommRelease.ask(PROC, (int) job.pid(), 300).pids());
        assertEquals(0, count("released"), "nothing asked of the rank that has its channel:\n" + out());
        assertTrue(CommRelease.optedIn(PROC, ranks.getFirst()) != CommRelease.optedIn(PROC, ranks.get(1)));
    }

    @Test
    void descriptorsThatOnlyLookLikeAChannelAreNotUsed() throws Exception {
        startJob("unsealed", "readonly");
        for (int r : ranks) {
            assertTrue(CommRelease.optedIn(PROC, r), "pid " + r + " shows a descriptor named as a channel is");
            assertTrue(RankChannel.open(PROC, r).isEmpty(), "pid " + r + " (a memfd without the seals, or read-only)");
        }
        assertEquals(List.of(), CommRelease.ask(PROC, (int) job.pid(), 300).pids());
    }

    @Test
    void aDeletedFileAtTheMemfdsNameIsNotAChannel() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "only root can make /memfd:criu_gpu");
        startJob("file", "answer");
        List<Integer> notChannels = ranks.stream().filter(r -> RankChannel.open(PROC, r).isEmpty()).toList();
        assertEquals(1, notChannels.size(), "a deleted /memfd:criu_gpu taken for a channel, or the real one not:\n" + out());
        int fake = notChannels.getFirst();
        assertTrue(Files.list(PROC.resolve(fake + "/fd")).anyMatch(l -> {
            try {
                return Files.readSymbolicLink(l).toString().equals(RankChannel.FD_TARGET);
            } catch (IOException e) {
                return false;
            }
        }), "the fake is named as a channel is");
        assertEquals(List.of(), CommRelease.ask(PROC, (int) job.pid(), 300).pids());
    }

    @Test
    void ranksWithAChannelButNoNcclThreadAreNotAsked() throws Exception {
        startJob("answer", "answer", false);
        assertEquals(List.of(), CommRelease.ask(PROC, (int) job.pid(), 300).pids());
        assertEquals(0, count("released"), out());
    }
}

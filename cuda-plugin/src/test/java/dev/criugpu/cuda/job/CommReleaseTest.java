package dev.criugpu.cuda.job;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The dump's request to NCCL ranks that use criu_gpu, on real processes and real control directories: two sleeping
 * shells named as PyTorch's NCCL watchdog thread (so they read as ranks on NCCL's defaults), each with
 * /dev/shm/criu-gpu/PID, which answer the request as criu_gpu does (or never).
 */
class CommReleaseTest {
    private static final Path PROC = Path.of("/proc");
    private static final Path ROOT = Path.of("/dev/shm/criu-gpu");
    private Process job;
    private final List<Long> ranks = new ArrayList<>();
    private boolean createdRoot;

    /**
     * A rank: a shell that names itself as PyTorch's NCCL watchdog thread; with {@code answer}, it then does what
     * criu_gpu does when asked (its NCCL thread ends, it writes {@code released}). Once named it never forks (a child
     * would carry the name until its exec and read as one more rank, without a control directory): it blocks reading
     * a FIFO it holds both ends of, and a helper forked before the naming watches for the request and wakes it.
     */
    private static final String RANK = "f=/tmp/criu-gpu-rank-$$; mkfifo $f; exec 3<>$f; rm $f; d=/dev/shm/criu-gpu/$$; "
            + "if [ \"$ANSWER\" = 1 ]; then ( while [ ! -e $d/request ]; do sleep 0.01; done; echo go >&3 ) & fi; "
            + "printf pt_nccl_watchdg > /proc/self/comm; "
            + "if [ \"$ANSWER\" = 1 ]; then read x <&3; printf sh > /proc/self/comm; echo 1 > $d/released; fi; "
            + "read x <&3";

    private void startJob(boolean answer) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("sh", "-c", "for i in 1 2; do sh -c \"$RANK\" & done; wait");
        pb.environment().put("RANK", RANK);
        pb.environment().put("ANSWER", answer ? "1" : "0");
        job = pb.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (ranks.size() < 2 && System.nanoTime() < deadline) {
            ranks.clear();
            job.toHandle().children().forEach(c -> ranks.add(c.pid()));
            Thread.onSpinWait();
        }
        assertEquals(2, ranks.size(), "the job's two ranks");
        for (long r : ranks) {
            while (!Files.readString(PROC.resolve(r + "/comm")).strip().equals("pt_nccl_watchdg")) {
                assertTrue(System.nanoTime() < deadline, "pid " + r + " never named itself");
                Thread.onSpinWait();
            }
        }
    }

    @AfterEach
    void stopJob() throws IOException {
        if (job == null) return;
        job.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
        job.destroyForcibly();
        for (long r : ranks) deleteTree(ROOT.resolve(Long.toString(r)));
        if (createdRoot) {
            // left as the tests made it (0755, this user's), it would keep other users' ranks out of it
            try {
                Files.deleteIfExists(ROOT);
            } catch (java.nio.file.DirectoryNotEmptyException e) {
                // a real job's directory is in it now: it stays
            }
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) Files.delete(f);
        }
        Files.delete(dir);
    }

    private Path controlDir(long pid) throws IOException {
        if (!Files.exists(ROOT)) {
            Files.createDirectory(ROOT);
            createdRoot = true;
        }
        Path d = ROOT.resolve(Long.toString(pid));
        Files.createDirectory(d, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        return d;
    }

    @Test
    void ranksThatAnswerAreReleasedUntilTheDumpEnds() throws Exception {
        startJob(true);
        for (long r : ranks) controlDir(r);
        CommRelease release = CommRelease.ask(PROC, (int) job.pid(), 10_000);
        assertEquals(ranks.stream().map(Long::intValue).sorted().toList(), release.pids().stream().sorted().toList());
        for (long r : ranks) assertTrue(Files.exists(ROOT.resolve(r + "/request")), "asked until the dump ends");
        release.close();
        for (long r : ranks) assertFalse(Files.exists(ROOT.resolve(r + "/request")), "told to go on at the end");
    }

    @Test
    void ranksThatDoNotAnswerInTimeAreToldToGoOnAndLeftToTheCheck() throws Exception {
        startJob(false);
        for (long r : ranks) controlDir(r);
        CommRelease release = CommRelease.ask(PROC, (int) job.pid(), 300);
        assertEquals(List.of(), release.pids());
        for (long r : ranks) assertFalse(Files.exists(ROOT.resolve(r + "/request")), "the request is taken back");
    }

    @Test
    void aRankWithoutItsControlDirectoryMeansNoRankIsAsked() throws Exception {
        startJob(true);
        Path only = controlDir(ranks.getFirst());
        assertEquals(List.of(), CommRelease.ask(PROC, (int) job.pid(), 300).pids());
        assertFalse(Files.exists(only.resolve("request")), "nothing asked of the rank that has its directory");
        assertTrue(CommRelease.optedIn(PROC, ranks.getFirst().intValue()));
        assertFalse(CommRelease.optedIn(PROC, ranks.get(1).intValue()));
    }

    @Test
    void aControlDirectoryOfAnotherUserOrALinkIsNotUsed() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "chown needs root");
        startJob(true);
        Path other = controlDir(ranks.getFirst());
        Files.setAttribute(other, "unix:uid", 65534);
        Path target = Files.createTempDirectory("criu-gpu-link");
        Files.createSymbolicLink(ROOT.resolve(Long.toString(ranks.get(1))), target);
        try {
            assertFalse(CommRelease.optedIn(PROC, ranks.getFirst().intValue()), "owned by another user");
            assertFalse(CommRelease.optedIn(PROC, ranks.get(1).intValue()), "a symbolic link");
            assertEquals(List.of(), CommRelease.ask(PROC, (int) job.pid(), 300).pids());
            assertFalse(Files.exists(target.resolve("request")), "nothing written through the link");
        } finally {
            Files.delete(ROOT.resolve(Long.toString(ranks.get(1))));
            Files.delete(target);
        }
    }

    @Test
    void aJobWithoutNcclRanksIsNotAsked() throws Exception {
        job = new ProcessBuilder("sh", "-c", "sleep 600 & sleep 600 & wait").start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (ranks.size() < 2 && System.nanoTime() < deadline) {
            ranks.clear();
            job.toHandle().children().forEach(c -> ranks.add(c.pid()));
            Thread.onSpinWait();
        }
        for (long r : ranks) controlDir(r);
        assertEquals(List.of(), CommRelease.ask(PROC, (int) job.pid(), 300).pids());
        for (long r : ranks) assertFalse(Files.exists(ROOT.resolve(r + "/request")));
    }
}

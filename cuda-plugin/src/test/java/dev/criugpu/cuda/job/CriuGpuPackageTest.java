package dev.criugpu.cuda.job;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The plugin's side ({@link CommRelease}) and the ranks' side (the criu_gpu package, src/main/python) together, on
 * two real rank processes: only torch is a stand-in (src/test/python/stubtorch: its all-reduce combines the ranks'
 * values through files, its process group runs a thread named as PyTorch's NCCL watchdog). The dump's request makes
 * both ranks agree on a step, destroy their group and say so; the end of the dump makes them build a new one and
 * step on.
 */
class CriuGpuPackageTest {
    private static final Path PROC = Path.of("/proc");
    private static final Path ROOT = Path.of("/dev/shm/criu-gpu");
    private static final Pattern PID = Pattern.compile("(?m)^rank (\\d) pid (\\d+)$");
    private Process job;
    private final List<Integer> ranks = new ArrayList<>();
    private boolean rootExisted;

    @AfterEach
    void stop() throws IOException {
        if (job != null) {
            job.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
            job.destroyForcibly();
        }
        for (int r : ranks) {
            Path d = ROOT.resolve(Integer.toString(r));
            if (Files.isDirectory(d)) {
                try (var files = Files.list(d)) {
                    for (Path f : files.toList()) Files.delete(f);
                }
                Files.delete(d);
            }
        }
        if (!rootExisted) {
            try {
                Files.deleteIfExists(ROOT);
            } catch (java.nio.file.DirectoryNotEmptyException e) {
                // a real job's directory is in it now
            }
        }
    }

    private static boolean python3() {
        try {
            return new ProcessBuilder("python3", "-c", "pass").start().waitFor() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    private static String out(Path log) throws IOException {
        return Files.exists(log) ? Files.readString(log) : "";
    }

    /** Until {@code log} matches {@code re} {@code count} times; the log when it does not within the timeout. */
    private static void await(Path log, String re, int count, long seconds) throws Exception {
        Pattern p = Pattern.compile(re, Pattern.MULTILINE);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            Matcher m = p.matcher(out(log));
            int n = 0;
            while (m.find()) n++;
            if (n >= count) return;
            assertTrue(System.nanoTime() < deadline, "no " + count + " x '" + re + "' within " + seconds + " s:\n" + out(log));
            Thread.sleep(10);
        }
    }

    private static int lastStep(String log, int rank) {
        Matcher m = Pattern.compile("(?m)^rank " + rank + " step (\\d+)$").matcher(log);
        int last = -1;
        while (m.find()) last = Integer.parseInt(m.group(1));
        return last;
    }

    /** The job's two ranks on the stand-in torch, each past step 20; its output goes to the returned log. */
    private Path startJob(Path dir, String releaseWaitSeconds) throws Exception {
        assumeTrue(python3(), "python3 is not installed: the criu_gpu package's test cannot run");
        rootExisted = Files.exists(ROOT);
        Path log = dir.resolve("job.log");
        Files.createDirectories(dir.resolve("stub"));
        ProcessBuilder pb = new ProcessBuilder("python3", Path.of("src/test/python/criu_gpu_job.py").toAbsolutePath().toString())
                .redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("PYTHONPATH", Path.of("src/test/python/stubtorch").toAbsolutePath() + ":"
                + Path.of("src/main/python").toAbsolutePath());
        pb.environment().put("WORLD_SIZE", "2");
        pb.environment().put("STUB_DIR", dir.resolve("stub").toString());
        pb.environment().put("CRIU_GPU_RELEASE_WAIT_S", releaseWaitSeconds);
        job = pb.start();
        await(log, "^rank \\d step 20$", 2, 30);
        for (Matcher m = PID.matcher(out(log)); m.find(); ) ranks.add(Integer.parseInt(m.group(2)));
        assertEquals(2, ranks.size(), out(log));
        return log;
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void ranksWhoseDumpNeverEndsGoOnByThemselves(@TempDir Path dir) throws Exception {
        Path log = startJob(dir, "2");
        CommRelease release = CommRelease.ask(PROC, (int) job.pid(), 20_000);
        assertEquals(2, release.pids().size(), out(log));
        // criu killed between its init and its exit: nobody removes the request
        await(log, "no dump ended within 2 s of the release \\(criu killed\\?\\): going on", 2, 30);
        await(log, "NCCL communicators made again", 2, 30);
        for (int r : ranks) assertFalse(Files.exists(ROOT.resolve(r + "/" + CommRelease.REQUEST)), "pid " + r + "'s request stays");
        int at = lastStep(out(log), 0);
        await(log, "^rank 0 step " + (at + 10) + "$", 1, 30);
        release.close(); // what criu's exit would have done: nothing left to remove
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void ranksReleaseTheirGroupForTheDumpAndMakeANewOneAfterIt(@TempDir Path dir) throws Exception {
        Path log = startJob(dir, "900");
        CommRelease release = CommRelease.ask(PROC, (int) job.pid(), 20_000);
        assertEquals(ranks.stream().sorted().toList(), release.pids().stream().sorted().toList(), out(log));
        String released = out(log);
        assertEquals(2, released.split("NCCL communicators released for a checkpoint", -1).length - 1, released);
        int at0 = lastStep(released, 0);
        int at1 = lastStep(released, 1);
        assertTrue(Math.abs(at0 - at1) <= 1, "the ranks released at steps " + at0 + " and " + at1 + ": not together");
        for (int r : ranks) {
            assertFalse(NcclTransports.threadNames(PROC.resolve(Integer.toString(r))).contains("pt_nccl_watchdg"),
                    "pid " + r + " still runs its NCCL thread");
        }

        release.close();
        await(log, "NCCL communicators made again", 2, 30);
        await(log, "^rank \\d group 2$", 2, 30);
        await(log, "^rank 0 step " + (at0 + 10) + "$", 1, 30);
        await(log, "^rank 1 step " + (at1 + 10) + "$", 1, 30);
    }
}

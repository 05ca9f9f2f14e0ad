package dev.criugpu.cuda.job;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
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
    private static final Pattern PID = Pattern.compile("(?m)^rank (\\d) pid (\\d+)$");
    private static final Path OLD_CHANNEL_ROOT = Path.of("/dev/shm/criu-gpu");
    private static final int NOBODY = 65534;
    private Process job;
    private final List<Process> jobs = new ArrayList<>();
    private boolean madeOldRoot;
    private final List<Integer> ranks = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (Process p : jobs) {
            p.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        if (madeOldRoot) assertEquals(0, new ProcessBuilder("rm", "-rf", OLD_CHANNEL_ROOT.toString()).start().waitFor());
    }

    static boolean python3() {
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
    static void await(Path log, String re, int count, long seconds) throws Exception {
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
        Path log = startJob(dir, releaseWaitSeconds, List.of());
        for (Matcher m = PID.matcher(out(log)); m.find(); ) ranks.add(Integer.parseInt(m.group(2)));
        assertEquals(2, ranks.size(), out(log));
        return log;
    }

    /** The same, started through {@code launcher} (a command that runs the rest of its arguments), in {@link #jobs}. */
    private Path startJob(Path dir, String releaseWaitSeconds, List<String> launcher) throws Exception {
        assumeTrue(python3(), "python3 is not installed: the criu_gpu package's test cannot run");
        Path log = dir.resolve("job.log");
        Files.createDirectories(dir.resolve("stub"));
        List<String> command = new ArrayList<>(launcher);
        command.addAll(List.of("python3", Path.of("src/test/python/criu_gpu_job.py").toAbsolutePath().toString()));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("PYTHONPATH", Path.of("src/test/python/stubtorch").toAbsolutePath() + ":"
                + Path.of("src/main/python").toAbsolutePath());
        pb.environment().put("WORLD_SIZE", "2");
        pb.environment().put("STUB_DIR", dir.resolve("stub").toString());
        pb.environment().put("CRIU_GPU_RELEASE_WAIT_S", releaseWaitSeconds);
        job = pb.start();
        jobs.add(job);
        await(log, "^rank \\d step 20$", 2, 30);
        return log;
    }

    private static int count(Path log, String re) throws IOException {
        return (int) Pattern.compile(re, Pattern.MULTILINE).matcher(out(log)).results().count();
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
        for (int r : ranks) {
            try (RankChannel c = RankChannel.open(PROC, r).orElseThrow()) {
                assertEquals(0, c.requested(), "pid " + r + "'s request stays");
            }
        }
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
        assertEquals(2, count(log, "^rank \\d cache emptied$"), "PyTorch's cached blocks are handed back before the dump:\n" + released);
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

    /** What another user could make of 1da7716's channel root before any job: /dev/shm/criu-gpu, theirs, in {@code mode}. */
    private void squatOldChannelRoot(String mode) throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "only root can act as another user here");
        assertFalse(Files.exists(OLD_CHANNEL_ROOT, LinkOption.NOFOLLOW_LINKS), OLD_CHANNEL_ROOT + " exists: remove it first");
        madeOldRoot = true;
        Files.createDirectory(OLD_CHANNEL_ROOT);
        Files.setAttribute(OLD_CHANNEL_ROOT, "unix:uid", NOBODY);
        Files.setAttribute(OLD_CHANNEL_ROOT, "unix:mode", Integer.parseInt(mode, 8));
    }

    private static void asNobody(String script, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("setpriv", "--reuid=" + NOBODY, "--regid=" + NOBODY,
                "--clear-groups", "sh", "-c", script, "sh"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "as nobody: " + script + "\n" + out);
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void anotherUsersRequestAndLinkInDevShmNeitherAskNorRedirectARank(@TempDir Path dir) throws Exception {
        // T1: the owner of a sticky /dev/shm/criu-gpu swaps each rank's directory for one holding `request` and a
        // `released` that links to a root-only file (1da7716's rank then overwrote it and tore down its group)
        squatOldChannelRoot("1777");
        Path victim = Files.writeString(dir.resolve("victim"), "precious\n");
        Files.setPosixFilePermissions(victim, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        Path log = startJob(dir, "900");
        asNobody("cd " + OLD_CHANNEL_ROOT + " && victim=$1 && shift && for p in \"$@\"; do "
                + "[ -e $p ] && mv $p $p.gone; mkdir $p && : > $p/request && ln -s \"$victim\" $p/released; done",
                victim.toString(), Integer.toString(ranks.get(0)), Integer.toString(ranks.get(1)));
        for (int r = 0; r < 2; r++) await(log, "^rank " + r + " step " + (lastStep(out(log), r) + 30) + "$", 1, 30);
        assertEquals("precious\n", Files.readString(victim), "a rank wrote through another user's link");
        assertEquals(0, count(log, "released for a checkpoint"), "another user's file asked the ranks:\n" + out(log));
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aChannelRootSquattedByAnotherUserDoesNotKeepTheJobOut(@TempDir Path dir) throws Exception {
        // T3: a 0755 /dev/shm/criu-gpu made first by another user kept every rank of 1da7716 from its directory
        squatOldChannelRoot("755");
        Path log = startJob(dir, "900");
        try (CommRelease release = CommRelease.ask(PROC, (int) job.pid(), 20_000)) {
            assertEquals(ranks.stream().sorted().toList(), release.pids().stream().sorted().toList(), out(log));
        }
        await(log, "NCCL communicators made again", 2, 30);
    }

    @Test
    @Timeout(value = 180, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aDumpOfAJobInOnePidNamespaceNeverAsksAJobInAnother(@TempDir Path dir) throws Exception {
        // T2: two jobs of one user sharing /dev/shm (--ipc=host), each in its own pid namespace: their ranks see the
        // same small pids, which named 1da7716's directories, so a dump of one made the other release and wait
        assumeTrue("root".equals(System.getProperty("user.name")), "a pid namespace needs root");
        List<String> ownPidNamespace = List.of("unshare", "--pid", "--fork", "--mount-proc");
        Path logA = startJob(dir.resolve("a"), "900", ownPidNamespace);
        Process a = job;
        Path logB = startJob(dir.resolve("b"), "900", ownPidNamespace);
        List<String> pidsA = PID.matcher(out(logA)).results().map(m -> m.group(2)).sorted().toList();
        List<String> pidsB = PID.matcher(out(logB)).results().map(m -> m.group(2)).sorted().toList();
        assertEquals(pidsA, pidsB, "the two jobs' ranks see the same pids");
        try (CommRelease release = CommRelease.ask(PROC, (int) a.pid(), 20_000)) {
            assertEquals(2, release.pids().size(), out(logA));
            int atB = lastStep(out(logB), 0);
            await(logB, "^rank 0 step " + (atB + 30) + "$", 1, 30);
            assertEquals(0, count(logB, "released for a checkpoint"), "job B was asked by A's dump:\n" + out(logB));
        }
        await(logA, "NCCL communicators made again", 2, 30);
    }
}

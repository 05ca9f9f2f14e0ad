package dev.criugpu.cuda;

import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.cuda.bindings.cuda_h;
import dev.criugpu.api.log.CriuLog;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.sys.RestoreThreadsTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The whole-job lock as the dump issues it: the first PAUSE_DEVICES (criu's call for the tree's root, a launcher
 * without CUDA here) finds the CUDA tasks of the real running tree below it and locks them together; their own
 * PAUSE_DEVICES then change nothing. Without the quiesce each task is locked at its own call, as before.
 */
class DumpQuiesceTest {
    @TempDir
    Path images;
    @TempDir
    Path bin;
    final FakeDriver.Events events = new FakeDriver.Events();
    final FakeThreads threads = new FakeThreads(events);
    final FakeDriver driver = new FakeDriver(events, threads);
    final RecordingAgentLink agentLink = new RecordingAgentLink(events);
    TestServices services;
    Process launcher;
    int first;
    int second;

    @BeforeEach
    void setUp() throws Exception {
        services = new TestServices(Stage.DUMP, images, InventoryClaim.NONE);
        CriuLog.register("dev.criugpu.cuda", services);
        // a launcher with two workers, which it names once they run
        launcher = new ProcessBuilder("sh", "-c", "sleep 600 & echo $!; sleep 600 & echo $!; wait").start();
        BufferedReader out = new BufferedReader(new InputStreamReader(launcher.getInputStream(), StandardCharsets.UTF_8));
        first = Integer.parseInt(out.readLine().trim());
        second = Integer.parseInt(out.readLine().trim());
        driver.cuda(first, CudaState.RUNNING).cuda(second, CudaState.RUNNING);
    }

    @AfterEach
    void tearDown() throws Exception {
        launcher.descendants().forEach(ProcessHandle::destroyForcibly);
        launcher.destroyForcibly().waitFor();
    }

    DumpSession session(boolean quiesce) {
        return new DumpSession(services, new CudaDeps(driver, threads, agentLink,
                () -> { throw new AssertionError("no fallback while the agent lives"); },
                () -> { throw new AssertionError("no second agent while the first lives"); }), 10_000, List.of(), true, quiesce);
    }

    private long count(String event) {
        return events.all().stream().filter(event::equals).count();
    }

    @Test
    void theRootsPauseLocksEveryCudaTaskOfTheTreeAndTheirOwnPausesChangeNothing() throws Exception {
        DumpSession s = session(true);
        int root = (int) launcher.pid();
        assertEquals(Errno.NOT_SUPPORTED, s.pause(root), "the launcher holds no CUDA state");
        assertEquals(CudaState.LOCKED, driver.state(first));
        assertEquals(CudaState.LOCKED, driver.state(second));
        List<String> atRoot = events.all();
        assertTrue(atRoot.indexOf("watch running " + first) >= 0 && atRoot.indexOf("watch running " + first) < atRoot.indexOf("lock " + first),
                "each task is handed to the agent before its lock: " + atRoot);
        assertTrue(atRoot.indexOf("watch running " + second) >= 0 && atRoot.indexOf("watch running " + second) < atRoot.indexOf("lock " + second),
                "each task is handed to the agent before its lock: " + atRoot);

        assertEquals(0, s.pause(first));
        threads.hold(first);
        assertEquals(0, s.pause(second));
        threads.hold(second);
        assertEquals(1, count("lock " + first));
        assertEquals(1, count("lock " + second));

        s.checkpoint(first);
        s.checkpoint(second);
        assertEquals(1, count("checkpoint " + first));
        assertEquals(1, count("checkpoint " + second));
        s.exit(0, false);
    }

    @Test
    void withoutTheQuiesceEachTaskIsLockedAtItsOwnPause() throws Exception {
        DumpSession s = session(false);
        assertEquals(Errno.NOT_SUPPORTED, s.pause((int) launcher.pid()));
        assertEquals(CudaState.RUNNING, driver.state(first));
        assertEquals(CudaState.RUNNING, driver.state(second));
        assertEquals(0, s.pause(first));
        assertEquals(CudaState.LOCKED, driver.state(first));
        assertEquals(CudaState.RUNNING, driver.state(second));
    }

    /**
     * A task the job lock took that criu never pauses (its parent exited and it was reparented out of the dumped tree)
     * would be left out of the checkpoint wait: the first CHECKPOINT_DEVICES fails the dump, and criu's exit unlocks it.
     */
    @Test
    void aLockedTaskCriuNeverPausesFailsTheDumpBeforeAnyCheckpointAndIsUnlockedAtExit() throws Exception {
        DumpSession s = session(true);
        s.pause((int) launcher.pid());
        assertEquals(0, s.pause(first));
        threads.hold(first);
        // criu never reaches `second`
        CriuException e = assertThrows(CriuException.class, () -> s.checkpoint(first));
        assertTrue(e.getMessage().startsWith("[pid " + second + "]: locked with the job, but criu never paused it"),
                e.getMessage());
        assertEquals(0, count("checkpoint " + first), "no checkpoint starts while a locked task is outside criu's tree");
        assertFalse(s.exit(-1, false));
        assertEquals(CudaState.RUNNING, driver.state(first, true));
        assertEquals(CudaState.RUNNING, driver.state(second, true));
        assertTrue(threads.stillRunning().isEmpty(), "restore threads left running: " + threads.stillRunning());
    }

    /**
     * A task whose unlock failed after a failed job lock is not reported to the agent as returned: criu's exit tries
     * it again, and while it stays locked the agent keeps watching it.
     */
    @Test
    void aTaskThatCouldNotBeUnlockedStaysOnTheAgentsWatchAndIsRetriedAtExit() throws Exception {
        driver.fail(second, "lock", cuda_h.CUDA_ERROR_NOT_PERMITTED, false).fail(first, "unlock", cuda_h.CUDA_ERROR_NOT_SUPPORTED, true);
        DumpSession s = session(true);
        CriuException e = assertThrows(CriuException.class, () -> s.pause((int) launcher.pid()));
        assertTrue(e.getMessage().startsWith("pid " + first + ": CUDA lock of the job failed"), e.getMessage());
        assertEquals(CudaState.LOCKED, driver.state(first));
        assertFalse(s.exit(-1, false));
        assertTrue(count("unlock " + first) >= 2, "criu's exit tried the unlock again: " + events.all());
        assertFalse(events.all().contains("returned " + first), "reported as returned while locked: " + events.all());
        assertTrue(events.all().contains("returned " + second), events.all().toString());
        assertTrue(services.errors().stream().anyMatch(l -> l.contains("pid " + first + ": left locked")), services.errors().toString());
    }

    private static String sleepBinary() throws java.io.IOException {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            Path p = Path.of(dir, "sleep");
            if (java.nio.file.Files.isExecutable(p)) return p.toRealPath().toString();
        }
        throw new IllegalStateException("no sleep on PATH");
    }

    /**
     * Ranks started on NCCL's default transports: refused at the root's PAUSE_DEVICES, before any lock. A rank is known
     * by PyTorch's NCCL thread names, not its environment: here a sleep run through a link of that name (its comm).
     */
    @Test
    void ncclRanksOnTheDefaultTransportsAreRefusedBeforeAnyLock() throws Exception {
        Path rank = java.nio.file.Files.createSymbolicLink(bin.resolve("pt_nccl_watchdg"), Path.of(sleepBinary()));
        ProcessBuilder pb = new ProcessBuilder("sh", "-c", "\"$0\" 600 & echo $!; \"$0\" 600 & echo $!; wait", rank.toString());
        pb.environment().put("NCCL_IB_DISABLE", "1");
        pb.environment().put("NCCL_SOCKET_IFNAME", "lo");
        Process job = pb.start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(job.getInputStream(), StandardCharsets.UTF_8));
            int r0 = Integer.parseInt(out.readLine().trim()), r1 = Integer.parseInt(out.readLine().trim());
            // $! is printed right after the fork: until each child has exec'd, its threads are sh's, not a rank's
            RestoreThreadsTest.awaitExecd(r0, "pt_nccl_watchdg");
            RestoreThreadsTest.awaitExecd(r1, "pt_nccl_watchdg");
            driver.cuda(r0, CudaState.RUNNING).cuda(r1, CudaState.RUNNING);
            DumpSession s = session(true);
            CriuException e = assertThrows(CriuException.class, () -> s.pause((int) job.pid()));
            assertTrue(e.getMessage().startsWith("NCCL ranks pid " + r0 + ", pid " + r1 + " may connect through NCCL's "
                    + "P2P transport"), e.getMessage());
            assertTrue(e.getMessage().contains("start the job with NCCL_P2P_DISABLE=1") && e.getMessage().contains(
                    "nothing was locked, every task runs on"), e.getMessage());
            assertTrue(services.errors().stream().anyMatch(l -> l.contains("NCCL's SHM transport")), services.errors().toString());
            assertEquals(0, count("lock " + r0) + count("lock " + r1), events.all().toString());
            assertFalse(s.exit(-1, false));
            assertTrue(events.all().contains("returned " + r0) && events.all().contains("returned " + r1), events.all().toString());

            DumpSession unchecked = new DumpSession(services, new CudaDeps(driver, threads, agentLink, () -> null, () -> null),
                    10_000, List.of(), true, true, false);
            assertEquals(Errno.NOT_SUPPORTED, unchecked.pause((int) job.pid()));
            assertEquals(CudaState.LOCKED, driver.state(r0, true), "CRIU_CUDA_NCCL_CHECK=0 locks as before");
        } finally {
            job.descendants().forEach(ProcessHandle::destroyForcibly);
            job.destroyForcibly().waitFor();
        }
    }
}

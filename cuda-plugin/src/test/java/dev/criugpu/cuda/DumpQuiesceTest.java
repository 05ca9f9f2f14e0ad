package dev.criugpu.cuda;

import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.Errno;
import dev.criugpu.api.log.CriuLog;
import dev.criugpu.cuda.state.CudaState;
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
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The whole-job lock as the dump issues it: the first PAUSE_DEVICES (criu's call for the tree's root, a launcher
 * without CUDA here) finds the CUDA tasks of the real running tree below it and locks them together; their own
 * PAUSE_DEVICES then change nothing. Without the quiesce each task is locked at its own call, as before.
 */
class DumpQuiesceTest {
    @TempDir
    Path images;
    final FakeDriver.Events events = new FakeDriver.Events();
    final FakeThreads threads = new FakeThreads(events);
    final FakeDriver driver = new FakeDriver(events, threads);
    final RecordingAgentLink watchdog = new RecordingAgentLink(events);
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
        return new DumpSession(services, new CudaDeps(driver, threads, watchdog,
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
        assertTrue(atRoot.indexOf("guard running " + first) >= 0 && atRoot.indexOf("guard running " + first) < atRoot.indexOf("lock " + first),
                "each task is handed to the agent before its lock: " + atRoot);
        assertTrue(atRoot.indexOf("guard running " + second) >= 0 && atRoot.indexOf("guard running " + second) < atRoot.indexOf("lock " + second),
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
}

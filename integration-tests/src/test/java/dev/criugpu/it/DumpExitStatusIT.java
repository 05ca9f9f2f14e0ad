package dev.criugpu.it;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A dump that criu completes but the CUDA plugin must still fail (DESIGN rule 12): a task criu leaves alive
 * ({@code -s}, {@code -R}) whose checkpointed CUDA state cannot be put back (the fake cuda-checkpoint's
 * {@code FAKE_CUDA_FAIL_RESTORE=1}). criu must end with status 1, and only after everything it does past the plugins'
 * exit hook: the tree left stopped with {@code -s} (a criu ended inside the hook resumed it instead: the kernel
 * detached the tasks before criu stopped them), criu's own end of the dump logged. Real criu 4.2.1, forced mode, the
 * CLI backend ({@link FakeCuda}).
 */
@ExtendWith(DockerRequired.class)
class DumpExitStatusIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    private static final String WILL_EXIT_1 = "criu will exit with status 1, not 0, after its cleanup";
    /** criu's last line of a dump, written after pstree_switch_state and its cleanup. */
    private static final String CRIU_FINISHED = "Dumping finished successfully";

    private final List<Runnable> cleanup = new ArrayList<>();

    private record Case(CriuContainer criu, FakeCuda cuda, CounterWorkload counter, int pid, String images) {
        CriuRun dumpWithFailingRestore(String... args) {
            cuda.set("FAKE_CUDA_FAIL_RESTORE", "1");
            return cuda.env(CriuCommand.dump(pid, images).withPlugins().forced()).args(args).runIn(criu);
        }

        /** The task's state letter from /proc (R, S, T, ...). */
        String procState() {
            String line = criu.exec("grep", "^State:", "/proc/" + pid + "/status").orFail().stdout().strip();
            return line.substring("State:".length()).strip().substring(0, 1);
        }
    }

    private Case start(CriuContainer criu, String name) {
        String dir = "/tmp/exit-status-" + name;
        FakeCuda.Running t = FakeCuda.startCudaTask(criu, dir, CounterWorkload::startSingle, cleanup);
        return new Case(criu, t.cuda(), t.counter(), t.pid(), dir + "/img");
    }

    @AfterEach
    void cleanUp() {
        cleanup.forEach(Runnable::run);
        cleanup.clear();
    }

    /** Status 1, the plugin's line, and criu's own end of the dump after it. */
    private static void assertFailedAfterCriusCleanup(Case c, CriuRun dump) {
        String log = dump.logTail(60);
        assertEquals(1, dump.result().exitCode(), "criu's status; " + dump.result().describe() + "\n" + log);
        List<String> line = dump.logLinesContaining(WILL_EXIT_1);
        assertEquals(1, line.size(), "one line saying criu exits 1 after its cleanup:\n" + log);
        assertTrue(line.getFirst().contains("Error (cuda_plugin)"), line.getFirst());
        assertFalse(dump.logLinesContaining("pid " + c.pid).isEmpty(), "the task is named:\n" + log);
        int said = dump.log().indexOf(WILL_EXIT_1);
        int finished = dump.log().indexOf(CRIU_FINISHED);
        assertTrue(finished > said, "criu went on to the end of its dump after the plugin's exit hook:\n" + log);
        assertEquals("checkpointed", c.cuda.state(c.pid), "calls: " + c.cuda.calls());
    }

    @Test
    void leaveStoppedWithATaskThatCannotBeReturnedExitsOneAndLeavesTheTreeStopped(CriuContainer criu) {
        Case c = start(criu, "stopped");
        CriuRun dump = c.dumpWithFailingRestore("-s");

        assertEquals(1, dump.result().exitCode(), "criu's status; " + dump.result().describe() + "\n" + dump.logTail(40));
        assertTrue(criu.pidInUse(c.pid), "pid " + c.pid + " is gone");
        assertEquals("T", c.procState(), "pid " + c.pid + " after criu's end with -s:\n" + dump.logTail(40));
        assertFailedAfterCriusCleanup(c, dump);
        // and it stays so: nothing of ours (the CUDA agent returning what it can once criu is gone) resumes it
        long before = c.counter.lastValues().getFirst();
        sleep(Duration.ofSeconds(2));
        assertEquals("T", c.procState(), "pid " + c.pid + " 2 s after criu's end with -s");
        assertEquals(before, c.counter.lastValues().getFirst(), "the stopped task counted on");
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    @Test
    void leaveRunningWithATaskThatCannotBeReturnedExitsOneAndTheTaskRunsOn(CriuContainer criu) {
        Case c = start(criu, "running");
        CriuRun dump = c.dumpWithFailingRestore("-R");

        assertFailedAfterCriusCleanup(c, dump);
        assertTrue(criu.pidInUse(c.pid), "pid " + c.pid + " is gone");
        c.counter.awaitProgress(5);
    }
}

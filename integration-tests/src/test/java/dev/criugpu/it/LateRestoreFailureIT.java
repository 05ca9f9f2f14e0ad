package dev.criugpu.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The policy for a device restore that fails after criu forked (README, "How a criu command goes"): criu 4.2.1
 * ignores RESUME_DEVICES_LATE's result, so the plugin kills the task it could not restore. Proven here with real criu:
 * that kill makes criu fail the whole restore — it cannot detach the dead task, kills the rest of the tree and exits
 * non-zero — so a caller sees a failed command and no process of the tree runs. The device failure itself is the
 * forced-mode fault switch (no GPU here); the kill and everything after it are the real path.
 */
@ExtendWith(DockerRequired.class)
class LateRestoreFailureIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    @Test
    void aTaskWhoseDeviceRestoreFailsFailsTheRestoreAndNoTaskOfTheTreeRuns(CriuContainer criu) {
        CounterWorkload tree = CounterWorkload.startTree(criu, "/tmp/late");
        CriuCommand.dump(tree.rootPid(), "/tmp/late.img").withPlugins().forced().runIn(criu).orFail();
        List<Long> atDump = tree.awaitDumped();

        CriuRun restore = CriuCommand.restore("/tmp/late.img").withPlugins().forced()
                .env("CRIU_GPU_FAULT", "cuda_plugin:resume-devices-late").runIn(criu);

        assertNotEquals(0, restore.result().exitCode(), "criu restore succeeded although a task's device restore failed:\n"
                + restore.logTail(40));
        int first = tree.counters().getFirst().pid();
        List<String> ours = restore.logLinesContaining("Error (cuda_plugin): pid " + first + ": device restore failed");
        assertEquals(1, ours.size(), "one error line naming the pid:\n" + restore.logTail(40));
        assertTrue(ours.getFirst().contains("killed it so that it cannot run without its GPU state"), ours.getFirst());
        assertFalse(restore.logLinesContaining("Killing processes because of failure on restore").isEmpty(),
                "criu did not fail the restore:\n" + restore.logTail(40));
        assertTrue(restore.logLinesContaining("Restore finished successfully").isEmpty());
        for (CounterWorkload.Counter c : tree.counters()) {
            Eventually.await("pid " + c.pid() + " of the failed restore to be gone", java.time.Duration.ofSeconds(20),
                    () -> !criu.pidInUse(c.pid()));
        }
        assertEquals(atDump, tree.lastValues(), "a task of the failed restore ran");

        CriuRun again = CriuCommand.restore("/tmp/late.img").withPlugins().forced().runIn(criu).orFail();
        tree.assertContinuedFrom(atDump);
        assertTrue(again.logLinesContaining("device restore failed").isEmpty());
        tree.kill();
    }
}

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
 * The policy for a device restore that fails after criu forked (docs/how-it-works.md): criu 4.2.1
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
        assertTrue(ours.getFirst().contains("killed it so that it cannot run without its GPU state (this fails the "
                + "restore); said so on its stderr (/tmp/late.stderr)"), ours.getFirst());
        // the task's own stderr (criu reopened the file at restore) has the line too: criu's caller may drop criu's log
        List<String> told = criu.sh("cat /tmp/late.stderr").orFail().stdout().lines().toList();
        assertTrue(told.contains("criu restore (criu-java-gpu): pid " + first + ": device restore failed (fault injected "
                + "by CRIU_GPU_FAULT); killing it, since it cannot run without its GPU state"), told.toString());
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

    /**
     * The same late failure where the task is the first process of its own pid namespace, as every container's is
     * (runc, podman, containerd), and has threads: killed while criu traces its threads, it waits in the kernel for
     * them (zap_pid_ns_processes) while criu waits for it (measured on a GPU host through containerd: criu hung,
     * StartContainer never returned, a zombie stayed). The restore must end, failed, with no task running.
     */
    @Test
    void aNamespaceInitWhoseDeviceRestoreFailsEndsTheRestoreToo(CriuContainer criu) {
        CounterWorkload w = CounterWorkload.startThreadedNamespaceInit(criu, "/tmp/nsinit", 2);
        int init = w.rootPid();
        assertTrue(criu.sh("grep -q '^NSpid:.*\\s1$' /proc/" + init + "/status").succeeded(), "pid " + init
                + " is not pid 1 of its namespace: " + criu.sh("grep NSpid /proc/" + init + "/status").stdout());
        CriuCommand.dump(init, "/tmp/nsinit.img").withPlugins().forced().runIn(criu).orFail();
        List<Long> atDump = w.awaitDumped();

        // bounded: the bug was a hang (criu killed after 60 s gives 137)
        CriuRun restore = CriuCommand.restore("/tmp/nsinit.img").withPlugins().forced().launchedBy("timeout -s KILL 60")
                .env("CRIU_GPU_FAULT", "cuda_plugin:resume-devices-late").runIn(criu);
        assertEquals(1, restore.result().exitCode(), "criu restore did not end with its failure status (137: it hung "
                + "and was killed after 60 s):\n" + restore.logTail(40));
        // the restored init's pid outside its namespace need not be the dumped one: criu sets it only inside
        List<String> ours = restore.logLinesContaining(": device restore failed (fault injected");
        assertEquals(1, ours.size(), restore.logTail(40));
        assertTrue(ours.getFirst().contains("killed it so that it cannot run without its GPU state"), ours.getFirst());
        assertFalse(restore.logLinesContaining("Killing processes because of failure on restore").isEmpty(),
                restore.logTail(40));
        int restored = Integer.parseInt(ours.getFirst().replaceFirst(".*Error \\(cuda_plugin\\): pid (\\d+):.*", "$1"));
        Eventually.await("pid " + restored + " of the failed restore to be gone", java.time.Duration.ofSeconds(20),
                () -> !criu.pidInUse(restored));
        assertEquals(atDump, w.lastValues(), "a task of the failed restore ran");
    }
}

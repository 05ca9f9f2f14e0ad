package dev.criugpu.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 2.3: JVM threads take pids in criu's pid namespace. With the next free pid set to the tree's own pids
 * right before the restore, a JVM started before criu forks the tree would take those pids and the restore would
 * fail ("Can't fork ... File exists"); the plugins must start Java only after the tree exists.
 */
@ExtendWith(DockerRequired.class)
class ForcedTreePidIT {
    private static CriuContainer criu;

    @BeforeAll
    static void start() {
        criu = CriuContainer.startWithPlugins(CriuImage.CRIU_4_2_1, PluginDir.fromBuild());
    }

    @AfterAll
    static void stop() {
        if (criu != null) criu.close();
    }

    @Test
    void treeRestoresWhenItsPidsAreTheNextToBeAllocated() {
        CounterWorkload tree = CounterWorkload.startTree(criu, "/tmp/tree");
        CriuCommand.dump(tree.rootPid(), "/tmp/tree.img").withPlugins().forced().runIn(criu).orFail();
        tree.awaitGone();
        List<Long> atDump = tree.lastValues();

        int lowest = tree.counters().stream().mapToInt(CounterWorkload.Counter::pid).min().orElseThrow();
        CriuRun restore = CriuCommand.restore("/tmp/tree.img").withPlugins().forced()
                .prelude("echo " + (lowest - 1) + " > /proc/sys/kernel/ns_last_pid")
                .runIn(criu).orFail();
        tree.assertContinuedFrom(atDump);
        for (CounterWorkload.Counter c : tree.counters()) {
            assertTrue(HookTrace.anyPluginTraced(restore, "RESUME_DEVICES_LATE", HookTrace.pid(c.pid())),
                    "no plugin traced RESUME_DEVICES_LATE(pid=" + c.pid() + "), log:\n" + restore.logTail(60));
        }
        tree.kill();
    }
}

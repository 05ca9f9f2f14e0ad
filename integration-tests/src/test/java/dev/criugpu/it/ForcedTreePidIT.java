package dev.criugpu.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;

/**
 * Issue 2.3: JVM threads take pids in criu's pid namespace. With the next free pid set to the tree's own pids
 * right before the restore, a JVM started before criu forks the tree would take those pids and the restore would
 * fail ("Can't fork ... File exists"); the plugins must start Java only after the tree exists.
 */
@ExtendWith(DockerRequired.class)
class ForcedTreePidIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    @Test
    void treeRestoresWhenItsPidsAreTheNextToBeAllocated(CriuContainer criu) {
        CounterWorkload tree = CounterWorkload.startTree(criu, "/tmp/tree");
        CriuCommand.dump(tree.rootPid(), "/tmp/tree.img").withPlugins().forced().runIn(criu).orFail();
        List<Long> atDump = tree.awaitDumped();

        int lowest = tree.counters().stream().mapToInt(CounterWorkload.Counter::pid).min().orElseThrow();
        CriuRun restore = CriuCommand.restore("/tmp/tree.img").withPlugins().forced()
                .prelude("echo " + (lowest - 1) + " > /proc/sys/kernel/ns_last_pid")
                .runIn(criu).orFail();
        tree.assertContinuedFrom(atDump);
        for (CounterWorkload.Counter c : tree.counters()) {
            HookTrace.assertResumedLate(restore, c.pid());
        }
        tree.kill();
    }
}

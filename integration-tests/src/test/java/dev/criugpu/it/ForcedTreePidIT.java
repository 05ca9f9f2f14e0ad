package dev.criugpu.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

    /**
     * The JVM's threads used to be parked 1024 below pid_max whatever the image held: a process dumped with thread ids
     * there (a busy host wraps through the whole range; measured with a DataLoader's thread at 31784 of 32768 on the
     * GPU host) could not be restored: a CUDA task's children and threads wait for criu's JVM (its plan), which takes
     * their ids first. The probe now parks the JVM below a window free of the image's ids. Here, without a GPU, criu
     * makes the threads before the JVM gets to them; what is checked is where the JVM's threads went.
     */
    @Test
    void processRestoresWhenItsThreadIdsLieWhereTheJvmUsedToPark(CriuContainer criu) {
        long pidMax = Long.parseLong(criu.exec("cat", "/proc/sys/kernel/pid_max").orFail().stdout().strip());
        // the shell that starts it takes one pid: the process then has the first pid the JVM took, its threads the next
        criu.sh("echo " + (pidMax - 1024 - 2) + " > /proc/sys/kernel/ns_last_pid").orFail();
        CounterWorkload proc = CounterWorkload.startThreaded(criu, "/tmp/top", 60);
        int pid = proc.rootPid();
        List<Integer> tids = Arrays.stream(criu.sh("ls /proc/" + pid + "/task").orFail().stdout().split("\\s+"))
                .map(Integer::parseInt).toList();
        assertEquals(61, tids.size(), tids.toString());
        assertTrue(tids.stream().allMatch(t -> t >= pidMax - 1024 && t < pidMax - 900), "not at the old parking: " + tids);
        CriuCommand.dump(pid, "/tmp/top.img").withPlugins().forced().runIn(criu).orFail();
        List<Long> atDump = proc.awaitDumped();

        CriuRun restore = CriuCommand.restore("/tmp/top.img").withPlugins().forced().runIn(criu).orFail();
        proc.assertContinuedFrom(atDump);
        // each plugin's probe says so (both are forced here); criu's JVM took its pids there
        long at = pid - 1 - 1024;
        assertFalse(restore.logLinesContaining("criu's JVM will take pids after " + at).isEmpty(), restore.logTail(60));
        String afterInit = restore.logLinesContaining(": JVM threads after init: ").getLast();
        for (String thread : afterInit.substring(afterInit.indexOf("init: ") + 6).split(", ")) {
            int tid = Integer.parseInt(thread.substring(0, thread.indexOf(' ')));
            if (!thread.endsWith(" criu")) assertTrue(tid > at && tid <= at + 1024, "not parked below the window: " + thread);
        }
        assertEquals(tids.size(), criu.sh("ls /proc/" + pid + "/task").orFail().stdout().strip().split("\\s+").length);
        proc.kill();
    }
}

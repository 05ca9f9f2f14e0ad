package dev.criugpu.it;

import dev.criugpu.inventory.InventoryPlugins;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 33 (DESIGN rule 1): criu clones a restore's first task with a raw clone3, which copies whatever libc lock
 * another thread of criu holds at that instant; with our JVM in criu, 20 of 81 of zdtm's namespace restores hung that
 * way. So criu must clone that task with no JVM in its process: Java decides a restore in the probe (a forked copy of
 * criu) at init, and criu's own JVM starts at POST_FORKING, after the clone. criu's log shows the order: the probe's
 * lines, then criu's "Forking task with PID", then each plugin's POST_FORKING line with criu's thread count at that
 * moment (1: nothing but criu's main thread was there when it cloned). A refusal still comes before any fork.
 */
@ExtendWith(DockerRequired.class)
class ForkSafetyIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1)
            .thenRun(criu -> criu.sh(FakeKfdTopology.mountInContainer()).orFail());

    private static final String SINGLE_THREADED = "criu cloned the restore's first task single-threaded; its JVM starts now";

    @Test
    void criuClonesTheFirstTaskBeforeAnyJvmRunsInIt(CriuContainer criu) {
        CounterWorkload tree = CounterWorkload.startTree(criu, "/tmp/forksafe");
        CriuCommand.dump(tree.rootPid(), "/tmp/forksafe.img").withPlugins().forced().runIn(criu).orFail();
        List<Long> atDump = tree.awaitDumped();

        CriuRun restore = CriuCommand.restore("/tmp/forksafe.img").withPlugins().forced().runIn(criu).orFail();
        tree.assertContinuedFrom(atDump);
        List<String> lines = restore.log().lines().toList();
        int fork = indexOf(lines, "Forking task with " + tree.rootPid() + " pid", restore);
        for (String plugin : List.of("cuda_plugin", "amdgpu_plugin")) {
            int probe = indexOf(lines, plugin + ": the restore probe (pid ", restore);
            assertTrue(probe < fork, plugin + "'s probe decided after criu forked:\n" + restore.logTail(60));
        }
        // the first plugin criu calls at POST_FORKING starts the JVM, the second joins it
        List<String> started = restore.logLinesContaining(SINGLE_THREADED);
        assertEquals(1, started.size(), restore.logTail(60));
        assertEquals(1, restore.logLinesContaining("joins the JVM started after criu's first fork").size(),
                restore.logTail(60));
        assertTrue(fork < indexOf(lines, SINGLE_THREADED, restore), "the JVM started before criu forked");
        // the probe ran the restore's check, not its init: init runs once, in criu
        assertEquals(1, restore.logLinesContaining("amdgpu_plugin: Java side ready for RESTORE").size(),
                "init runs once, in criu:\n" + restore.logTail(60));
        assertEquals(List.of(), restore.logLinesContaining("threads when it cloned"), restore.logTail(60));
        tree.kill();
    }

    @Test
    void anImpossibleRestoreIsRefusedBeforeCriuForksAnything(CriuContainer criu, @TempDir Path host) throws Exception {
        CounterWorkload task = CounterWorkload.startSingle(criu, "/tmp/refused");
        CriuCommand.dump(task.rootPid(), "/tmp/refused.img").withPlugins().forced().runIn(criu).orFail();
        task.kill();
        String inventory = "/tmp/refused.img/" + InventoryPlugins.INVENTORY_IMG;
        criu.copyOut(inventory, host.resolve(InventoryPlugins.INVENTORY_IMG));
        InventoryPlugins.setPlugins(host, List.of("amdgpu_plugin"));
        criu.copyIn(host.resolve(InventoryPlugins.INVENTORY_IMG), inventory);
        criu.sh("mkfifo /tmp/refused.img/amdgpu-kfd-1.img").orFail();

        CriuRun restore = CriuCommand.restore("/tmp/refused.img").withPlugins().forced().runIn(criu);
        assertNotEquals(0, restore.result().exitCode(), restore.logTail(30));
        assertEquals(1, restore.logLinesContaining("amdgpu-kfd-1.img: is a FIFO, not a regular file; refused").size(),
                restore.logTail(30));
        assertEquals(List.of(), restore.logLinesContaining("Forking task with"), "refused after a fork");
        assertEquals(List.of(), restore.logLinesContaining(SINGLE_THREADED), "criu's JVM started");
    }

    private static int indexOf(List<String> lines, String text, CriuRun run) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(text)) return i;
        }
        throw new AssertionError("no line with '" + text + "' in criu's log:\n" + run.logTail(60));
    }
}

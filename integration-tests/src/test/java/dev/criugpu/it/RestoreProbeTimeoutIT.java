package dev.criugpu.it;

import dev.criugpu.inventory.InventoryPlugins;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A restore probe that gives no verdict (a hung driver or NVML call inside the plugin's restore init) does not hold
 * criu: the shim kills it after CRIU_GPU_PROBE_TIMEOUT_S, and criu fails the restore of an image that needs the plugin
 * before it forks anything, images and pids untouched, so the same restore works once the cause is gone. The hang is
 * the forced-mode fault switch; the image is made to need cuda_plugin by its inventory's plugins field.
 */
@ExtendWith(DockerRequired.class)
class RestoreProbeTimeoutIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    @Test
    void aProbeThatHangsIsKilledAndTheRestoreRefusedBeforeAnyFork(CriuContainer criu, @TempDir Path host) throws Exception {
        CounterWorkload tree = CounterWorkload.startTree(criu, "/tmp/probe-hang");
        CriuCommand.dump(tree.rootPid(), "/tmp/probe-hang.img").withPlugins().forced().runIn(criu).orFail();
        List<Long> atDump = tree.awaitDumped();
        String inventory = "/tmp/probe-hang.img/" + InventoryPlugins.INVENTORY_IMG;
        criu.sh("cp " + inventory + " /tmp/probe-hang.inventory").orFail();
        criu.copyOut(inventory, host.resolve(InventoryPlugins.INVENTORY_IMG));
        InventoryPlugins.setPlugins(host, List.of("cuda_plugin"));
        criu.copyIn(host.resolve(InventoryPlugins.INVENTORY_IMG), inventory);

        CriuRun hung = CriuCommand.restore("/tmp/probe-hang.img").withPlugins().forced()
                .env("CRIU_GPU_FAULT", "cuda_plugin:stall-restore-probe").env("CRIU_GPU_PROBE_TIMEOUT_S", "2").runIn(criu);

        assertNotEquals(0, hung.result().exitCode(), "criu restore succeeded with a probe that never answered:\n"
                + hung.logTail(40));
        List<String> ours = hung.logLinesContaining("gave no verdict within 2 s (CRIU_GPU_PROBE_TIMEOUT_S): killed it");
        assertEquals(1, ours.size(), "one line saying why:\n" + hung.logLinesContaining("cuda_plugin"));
        assertFalse(hung.logLinesContaining("criu stalls restore probe").isEmpty(), "the fault never held the probe:\n"
                + hung.logTail(40));
        assertTrue(hung.logLinesContaining("Forking task with").isEmpty(), "criu forked a task:\n" + hung.logTail(40));
        assertEquals(atDump, tree.lastValues(), "a task of the refused restore ran");

        // the image as dumped (no GPU state here to need the plugin): the same pids are free, the tree runs on
        criu.sh("cp /tmp/probe-hang.inventory " + inventory).orFail();
        CriuCommand.restore("/tmp/probe-hang.img").withPlugins().forced().runIn(criu).orFail();
        tree.assertContinuedFrom(atDump);
        tree.kill();
    }
}

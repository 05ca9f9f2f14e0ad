package dev.criugpu.it.inventory;

import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.InventoryPlugins;
import dev.criugpu.it.CommandResult;
import dev.criugpu.it.CounterWorkload;
import dev.criugpu.it.CriuCommand;
import dev.criugpu.it.CriuContainer;
import dev.criugpu.it.CriuImage;
import dev.criugpu.it.CriuRun;
import dev.criugpu.it.DockerRequired;
import dev.criugpu.it.SharedCriuContainer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 3, the three inventory cases end to end in criu 4.2.1 (no GPU here). Each dump is of a CPU-only parent
 * and child with our plugin dir loaded (so the plugins were present and saved nothing); the inventory is then
 * left as criu wrote it, or rewritten with our writer on this host and copied back.
 *
 * <p>"Without our plugins" is a plugin dir that exists but lacks them: criu 4.2.1 checks the inventory's plugins
 * only after loading a plugin dir, and with no {@code --lib} and no {@code /usr/lib/criu} (as in this image) it
 * skips the check entirely, so an empty dir is what makes criu enforce the list.
 */
@ExtendWith(DockerRequired.class)
class InventoryCasesIT {
    private static final String NO_OUR_PLUGINS = "/tmp/criu-lib-without-gpu-plugins";
    private static final String CUDA_LISTED_NO_GPU =
            "Error (cuda_plugin): image holds CUDA state; no NVIDIA GPU here (/proc/driver/nvidia/gpus absent)";
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1)
            .thenRun(criu -> criu.exec("mkdir", "-p", NO_OUR_PLUGINS).orFail());

    /** Case (a): criu recorded an empty plugins list; the image restores with and without our plugins. */
    @Test
    void imageWithoutGpuStateRestoresWithAndWithoutOurPlugins(CriuContainer criu, @TempDir Path host) throws ImageException {
        Dumped plain = dumpTree(criu, "/tmp/inv-a-plain", host.resolve("plain"));
        assertEquals(Optional.of(List.of()), InventoryPlugins.listed(plain.host), "plugins criu recorded");
        assertEquals(Map.of(), Crit.show(criu, plain.inventory()).single().get("plugins_entry"),
                "crit: the plugins field is present and empty");

        CriuRun withoutOurs = CriuCommand.restore(plain.images).args("--lib", NO_OUR_PLUGINS).runIn(criu).orFail();
        assertEquals(List.of(), withoutOurs.logLinesMatching(Pattern.compile("cuda_plugin|amdgpu_plugin")),
                "a restore without our plugin dir mentions our plugins");
        plain.tree.assertContinuedFrom(plain.atDump);
        plain.tree.kill();

        Dumped withPlugins = dumpTree(criu, "/tmp/inv-a-lib", host.resolve("lib"));
        CriuRun withOurs = CriuCommand.restore(withPlugins.images).withPlugins().env("LD_DEBUG", "files")
                .runIn(criu).orFail();
        assertOneLine(withOurs, "cuda_plugin: disabled: the image holds no CUDA state");
        assertOneLine(withOurs, "amdgpu_plugin: disabled: the image holds no AMDGPU state");
        assertNoJvmLoaded(withOurs);
        withPlugins.tree.assertContinuedFrom(withPlugins.atDump);
        withPlugins.tree.kill();
    }

    /** Case (b): an inventory listing cuda_plugin is refused without it, and fails cleanly in its init without a GPU. */
    @Test
    void listedCudaPluginIsRequiredAndFailsInitWithoutGpu(CriuContainer criu, @TempDir Path host) throws ImageException {
        Dumped d = dumpTree(criu, "/tmp/inv-b", host);
        InventoryPlugins.setPlugins(d.host, List.of("cuda_plugin"));
        criu.copyIn(d.host.resolve(InventoryPlugins.INVENTORY_IMG), d.inventory());
        assertEquals(Map.of("plugins", List.of("cuda_plugin")),
                Crit.show(criu, d.inventory()).single().get("plugins_entry"), "crit reads the list we wrote");

        CriuRun refused = CriuCommand.restore(d.images).args("--lib", NO_OUR_PLUGINS).runIn(criu);
        assertNotEquals(0, refused.result().exitCode(), "criu restored an image whose required plugin is missing");
        assertOneLine(refused, "Missing required plugin: cuda_plugin");
        assertNothingRestored(criu, d.tree);

        CriuRun failed = CriuCommand.restore(d.images).withPlugins().runIn(criu);
        assertNotEquals(0, failed.result().exitCode(), "criu restored CUDA state on a host without an NVIDIA GPU");
        assertOneLine(failed, Pattern.quote(CUDA_LISTED_NO_GPU));
        assertEquals(List.of(), failed.logLinesContaining("Missing required plugin"),
                "our plugin was loaded, so criu must not report it missing");
        assertNothingRestored(criu, d.tree);

        // The image is otherwise sound: with the list emptied again the same images restore and continue.
        InventoryPlugins.setPlugins(d.host, List.of());
        criu.copyIn(d.host.resolve(InventoryPlugins.INVENTORY_IMG), d.inventory());
        CriuCommand.restore(d.images).withPlugins().runIn(criu).orFail();
        d.tree.assertContinuedFrom(d.atDump);
        d.tree.kill();
    }

    /** Case (c): an inventory without the plugins field (older criu) restores; the plugins gate on hardware. */
    @Test
    void inventoryWithoutPluginsFieldRestoresWithPluginsDisabledForNoHardware(CriuContainer criu, @TempDir Path host)
            throws ImageException {
        Dumped d = dumpTree(criu, "/tmp/inv-c", host);
        InventoryPlugins.clearPlugins(d.host);
        criu.copyIn(d.host.resolve(InventoryPlugins.INVENTORY_IMG), d.inventory());
        assertEquals(Optional.empty(), InventoryPlugins.listed(d.host));
        Map<String, Object> critInventory = Crit.show(criu, d.inventory()).single();
        assertFalse(critInventory.containsKey("plugins_entry"), "crit still sees a plugins field: " + critInventory);

        CriuRun restore = CriuCommand.restore(d.images).withPlugins().env("LD_DEBUG", "files").runIn(criu).orFail();
        assertOneLine(restore, Pattern.quote("cuda_plugin: disabled: no NVIDIA GPU (/proc/driver/nvidia/gpus absent)"));
        assertOneLine(restore, Pattern.quote("amdgpu_plugin: disabled: no AMD GPU (/dev/kfd absent)"));
        assertEquals(List.of(), restore.logLinesContaining("the image holds no"),
                "a plugin read the missing field as an empty list");
        assertNoJvmLoaded(restore);
        d.tree.assertContinuedFrom(d.atDump);
        d.tree.kill();
    }

    /** A parent and child dumped with our plugin dir, their inventory.img copied to {@code host}. */
    private record Dumped(CounterWorkload tree, List<Long> atDump, String images, Path host) {
        String inventory() {
            return images + "/" + InventoryPlugins.INVENTORY_IMG;
        }
    }

    private static Dumped dumpTree(CriuContainer criu, String name, Path host) {
        CounterWorkload tree = CounterWorkload.startTree(criu, name);
        String images = name + ".img";
        CriuCommand.dump(tree.rootPid(), images).withPlugins().runIn(criu).orFail();
        List<Long> atDump = tree.awaitDumped();
        criu.copyOut(images + "/" + InventoryPlugins.INVENTORY_IMG,
                host.resolve(InventoryPlugins.INVENTORY_IMG));
        return new Dumped(tree, atDump, images, host);
    }

    /** criu failed before creating any task: the dumped pids are free and no counter runs. */
    private static void assertNothingRestored(CriuContainer criu, CounterWorkload tree) {
        for (CounterWorkload.Counter c : tree.counters()) {
            assertFalse(criu.pidInUse(c.pid()), "pid " + c.pid() + " is in use after a failed restore");
        }
        // Zombies are left out: counters an earlier test killed may not be reaped yet.
        CommandResult ps = criu.exec("ps", "-e", "-o", "pid=,stat=,comm=").orFail();
        List<String> running = ps.stdout().lines().map(String::strip)
                .filter(l -> l.endsWith(" counter") && !l.split("\\s+")[1].startsWith("Z")).toList();
        assertEquals(List.of(), running, "a counter process runs after a failed restore");
    }

    private static void assertOneLine(CriuRun run, String regex) {
        List<String> lines = run.logLinesMatching(Pattern.compile(regex));
        assertEquals(1, lines.size(), "expected one criu log line matching '" + regex + "'; exit "
                + run.result().exitCode() + ", plugin lines in criu's log:\n"
                + String.join("\n", run.logLinesMatching(Pattern.compile("(?i)plugin"))));
    }

    private static void assertNoJvmLoaded(CriuRun run) {
        String ldDebug = run.result().stderr();
        // Positive control: LD_DEBUG=files reports the plugins' own loading, so a missing libjvm means something.
        assertTrue(ldDebug.contains(CriuContainer.PLUGIN_DIR + "/cuda_plugin.so"),
                "LD_DEBUG output does not show cuda_plugin.so being loaded");
        assertEquals(List.of(), ldDebug.lines().filter(l -> l.contains("libjvm")).toList(),
                "criu loaded the JVM although both plugins are disabled");
    }
}

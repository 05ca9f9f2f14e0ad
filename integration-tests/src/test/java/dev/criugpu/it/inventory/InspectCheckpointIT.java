package dev.criugpu.it.inventory;

import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.InventoryPlugins;
import dev.criugpu.inventory.Json;
import dev.criugpu.it.CommandResult;
import dev.criugpu.it.CounterWorkload;
import dev.criugpu.it.CriuCommand;
import dev.criugpu.it.CriuContainer;
import dev.criugpu.it.CriuImage;
import dev.criugpu.it.DockerRequired;
import dev.criugpu.it.HostCommand;
import dev.criugpu.it.PluginDir;
import dev.criugpu.it.SharedCriuContainer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 3, {@code criu-gpu inspect} on a real checkpoint: the host's {@code native/target/criu-lib/bin/criu-gpu}
 * reads a copied-out criu 4.2.1 dump of a parent and child and reports the tree, the commands and the required
 * plugins exactly as crit decodes them; {@code --json} follows the schema of docs/criu-gpu-cli.md ("inspect").
 */
@ExtendWith(DockerRequired.class)
class InspectCheckpointIT {
    private static final String IMAGES = "/tmp/inv-inspect.img";
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);
    private static Path criuGpu;

    @BeforeAll
    static void findCriuGpu() {
        criuGpu = PluginDir.fromBuild().dir().resolve("bin/criu-gpu");
        assertTrue(Files.isExecutable(criuGpu), criuGpu + " is missing: build native/ first");
    }

    @Test
    void inspectReportsWhatCritDecodes(CriuContainer criu, @TempDir Path host) throws ImageException {
        CounterWorkload tree = CounterWorkload.startTree(criu, "/tmp/inv-inspect");
        CriuCommand.dump(tree.rootPid(), IMAGES).withPlugins().runIn(criu).orFail();
        tree.awaitGone();
        Path dir = host.resolve("checkpoint");
        ImageTransfer.copyDirOut(criu, IMAGES, dir);

        Map<String, Object> critInventory = Crit.show(criu, IMAGES + "/inventory.img").single();
        List<Map<String, Object>> expected = expectedProcesses(criu);
        assertEquals(tree.counters().stream().map(c -> BigInteger.valueOf(c.pid())).toList(),
                expected.stream().map(p -> p.get("pid")).toList(), "crit's pstree is not the dumped tree");
        List<String> critRequired = requiredPer(critInventory);
        assertEquals(List.of(), critRequired, "criu recorded plugins for a CPU-only dump");

        String human = inspect(dir).stdout();
        assertHumanReport(human, dir, expected, "no plugin (no GPU state recorded)");

        Map<String, Object> json = Crit.asObject(Json.parse(inspect(dir, "--json").stdout()));
        InspectSchema.check(json);
        assertEquals(dir.toAbsolutePath().normalize().toString(), json.get("directory"));
        Map<String, Object> criuPart = Crit.asObject(json.get("criu"));
        assertEquals(critInventory.get("img_version"), criuPart.get("img_version"));
        assertEquals(critInventory.get("dump_criu_run_id"), criuPart.get("run_id"));
        Crit.asObject(criuPart.get("inventory")).forEach((k, v) ->
                assertEquals(critInventory.get(k), v, "criu.inventory." + k + " differs from crit"));
        assertEquals(Map.of("recorded", true, "required", critRequired, "cuda_host_copy", "criu"), json.get("plugins"));
        assertEquals(expected, json.get("processes"), "processes differ from crit's pstree and core images");

        // The report follows the inventory, not a fixed answer: list cuda_plugin in our copy and inspect again.
        InventoryPlugins.setPlugins(dir, List.of("cuda_plugin"));
        assertHumanReport(inspect(dir).stdout(), dir, expected, "cuda_plugin");
        Map<String, Object> listed = Crit.asObject(Json.parse(inspect(dir, "--json").stdout()));
        InspectSchema.check(listed);
        assertEquals(Map.of("recorded", true, "required", List.of("cuda_plugin"), "cuda_host_copy", "criu"), listed.get("plugins"));
        assertEquals(true, gpuEntry(listed, "cuda_plugin").get("listed"));
        assertEquals(false, gpuEntry(listed, "amdgpu_plugin").get("listed"));

        InventoryPlugins.clearPlugins(dir);
        Map<String, Object> legacy = Crit.asObject(Json.parse(inspect(dir, "--json").stdout()));
        InspectSchema.check(legacy);
        assertEquals(Map.of("recorded", false, "required", List.of(), "cuda_host_copy", "criu"), legacy.get("plugins"));
    }

    private static CommandResult inspect(Path dir, String... more) {
        List<String> argv = new ArrayList<>(List.of(criuGpu.toString(), "inspect", dir.toString()));
        argv.addAll(List.of(more));
        return HostCommand.run(dir, argv).orFail();
    }

    /** Each pstree entry as crit decodes it, with the command crit decodes from its core image. */
    private static List<Map<String, Object>> expectedProcesses(CriuContainer criu) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Object e : Crit.show(criu, IMAGES + "/pstree.img").entries()) {
            Map<String, Object> p = Crit.asObject(e);
            Map<String, Object> core = Crit.show(criu, IMAGES + "/core-" + p.get("pid") + ".img").single();
            Object comm = Crit.asObject(core.get("tc")).get("comm");
            out.add(Map.of("pid", p.get("pid"), "ppid", p.get("ppid"), "pgid", p.get("pgid"), "sid", p.get("sid"),
                    "threads", p.get("threads"), "command", comm));
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static List<String> requiredPer(Map<String, Object> critInventory) {
        Object entry = critInventory.get("plugins_entry");
        if (entry == null) throw new AssertionError("criu 4.2.1 wrote no plugins field: " + critInventory);
        return (List<String>) Crit.asObject(entry).getOrDefault("plugins", List.of());
    }

    private static Map<String, Object> gpuEntry(Map<String, Object> report, String plugin) {
        for (Object g : (List<?>) report.get("gpu")) {
            Map<String, Object> entry = Crit.asObject(g);
            if (plugin.equals(entry.get("plugin"))) return entry;
        }
        throw new AssertionError("no gpu entry for " + plugin + " in " + report.get("gpu"));
    }

    private static void assertHumanReport(String report, Path dir, List<Map<String, Object>> processes,
                                          String restoreNeeds) {
        assertTrue(report.startsWith("Checkpoint " + dir.toAbsolutePath().normalize() + "\n"), report);
        assertEquals(1, matching(report, "^\\s+restore needs\\s+" + Pattern.quote(restoreNeeds) + "$").size(),
                "restore needs line in:\n" + report);
        assertEquals(1, matching(report, "^Process tree \\(" + processes.size() + " processes\\)$").size(),
                "process count in:\n" + report);
        for (Map<String, Object> p : processes) {
            // The child is indented under its parent in the COMMAND column.
            String indent = BigInteger.ZERO.equals(p.get("ppid")) ? "" : "  ";
            String row = "^\\s+" + p.get("pid") + "\\s+" + p.get("ppid") + "\\s+" + p.get("pgid") + "\\s+"
                    + p.get("sid") + "\\s+" + ((List<?>) p.get("threads")).size() + "\\s{7}" + indent
                    + Pattern.quote((String) p.get("command")) + "$";
            assertEquals(1, matching(report, row).size(), "no row /" + row + "/ in:\n" + report);
        }
        assertFalse(report.contains("?"), "a command is unknown in:\n" + report);
    }

    private static List<String> matching(String text, String regex) {
        Pattern p = Pattern.compile(regex);
        return text.lines().filter(l -> p.matcher(l).find()).toList();
    }
}

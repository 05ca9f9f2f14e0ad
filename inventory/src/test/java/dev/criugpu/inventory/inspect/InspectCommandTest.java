package dev.criugpu.inventory.inspect;

import dev.criugpu.inventory.Fixtures;
import dev.criugpu.inventory.InventoryPlugins;
import dev.criugpu.inventory.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class InspectCommandTest {
    @TempDir
    Path tmp;

    private record Result(int rc, String out, String err) {
    }

    private static Result inspect(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = InspectCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** The real dump, its inventory listing both GPU plugins, and AMD state files beside it. */
    private Path gpuCheckpoint() throws Exception {
        Path dir = Fixtures.copy("tree", tmp.resolve("ckpt"));
        InventoryPlugins.setPlugins(dir, List.of("cuda_plugin", "amdgpu_plugin"));
        Files.write(dir.resolve("amdgpu-kfd-16.img"), new byte[1000]);
        Files.write(dir.resolve("amdgpu-pages-16-0.img"), new byte[3 << 20]);
        return dir;
    }

    @Test
    void humanReport() throws Exception {
        Path dir = gpuCheckpoint();
        Result r = inspect(dir.toString());
        assertEquals(0, r.rc(), r.err());
        assertEquals("", r.err());
        String out = r.out();
        assertTrue(out.contains("restore needs   cuda_plugin, amdgpu_plugin"), out);
        assertTrue(out.contains("criu 4.1 or newer"), out);
        assertTrue(out.contains("Process tree (3 processes)"), out);
        // The root first, its two children indented under it.
        assertTrue(out.matches("(?s).*\\n  16 +0 +16 +16 +1 +sh\\n  20 +16 .* {3}sleep\\n  21 +16 .* {3}sleep\\n.*"), out);
        assertTrue(out.contains("amdgpu_plugin: 2 file(s), 3.0 MiB (3146728 bytes) [required]"), out);
        assertTrue(out.contains("cuda_plugin: no images [required]"), out);
    }

    @Test
    void aHostCopyInThePluginsFormatIsNamed() throws Exception {
        Path dir = Fixtures.copy("tree", tmp.resolve("hc"));
        InventoryPlugins.setPlugins(dir, List.of("cuda_plugin", InventoryPlugins.HOST_COPY_FORMAT));
        Files.write(dir.resolve("cuda-hostcopy-16.img"), new byte[40]);
        String out = inspect(dir.toString()).out();
        assertTrue(out.contains("CUDA host copy  kept apart from criu's pages (criu_gpu_hostcopy_v1)"), out);
        assertTrue(out.contains("criu_gpu_hostcopy_v1: 1 file(s), 40 B (40 bytes) [required]")
                || out.contains("criu_gpu_hostcopy_v1: 1 file(s)"), out);
        Map<String, Object> plugins = Json.object(Json.object(Json.parse(inspect("--json", dir.toString()).out())).get("plugins"));
        assertEquals("plugin", plugins.get("cuda_host_copy"));
    }

    @Test
    void humanReportOfLegacyAndEmptyLists() throws Exception {
        Path dir = Fixtures.copy("tree", tmp.resolve("t"));
        assertTrue(inspect(dir.toString()).out().contains("restore needs   no plugin"));
        InventoryPlugins.clearPlugins(dir);
        String out = inspect(dir.toString()).out();
        assertTrue(out.contains("not recorded (older criu): every installed plugin is enabled"), out);
        // The plugins field is gone but the run id (also new in 4.1) still dates the image.
        assertTrue(out.contains("criu 4.1 or newer (records a run id)"), out);
    }

    @Test
    void criu43sCompressionFieldsAreShownAndDateTheImage() throws Exception {
        Path dir = Fixtures.copy("tree", tmp.resolve("c"));
        InventoryPlugins.rewriteInventory(dir, inv -> inv.toBuilder().setCompress(0).build());
        String out = inspect(dir.toString()).out();
        assertTrue(out.contains("criu 4.3 or newer (records compress)"), out);
        assertTrue(out.matches("(?s).*\\n  compression +none\\n.*"), out);
        InventoryPlugins.rewriteInventory(dir, inv -> inv.toBuilder().setCompress(2).setCompressBlockSize(65536).build());
        out = inspect(dir.toString()).out();
        assertTrue(out.matches("(?s).*\\n  compression +method 2, blocks of 65536 B\\n.*"), out);
        Map<String, Object> inventory = Json.object(Json.object(Json.object(Json.parse(
                inspect(dir.toString(), "--json").out())).get("criu")).get("inventory"));
        assertEquals(BigInteger.TWO, inventory.get("compress"));
        assertEquals(BigInteger.valueOf(65536), inventory.get("compress_block_size"));
    }

    @Test
    void jsonReportMatchesTheImages() throws Exception {
        Path dir = gpuCheckpoint();
        Result r = inspect(dir.toString(), "--json");
        assertEquals(0, r.rc(), r.err());
        Map<String, Object> doc = Json.object(Json.parse(r.out()));
        assertEquals(BigInteger.ONE, doc.get("schema"));
        assertEquals(dir.toAbsolutePath().toString(), doc.get("directory"));

        Map<String, Object> criu = Json.object(doc.get("criu"));
        Map<String, Object> critInventory = Json.object(Fixtures.critEntries(
                Fixtures.dir("tree").resolve("inventory.img")).getFirst());
        assertEquals(critInventory.get("img_version"), criu.get("img_version"));
        assertEquals(critInventory.get("dump_criu_run_id"), criu.get("run_id"));
        assertEquals(critInventory.get("lsmtype"), Json.object(criu.get("inventory")).get("lsmtype"));

        Map<String, Object> plugins = Json.object(doc.get("plugins"));
        assertEquals(true, plugins.get("recorded"));
        assertEquals(List.of("cuda_plugin", "amdgpu_plugin"), plugins.get("required"));
        assertEquals("criu", plugins.get("cuda_host_copy"));

        // Processes: exactly crit's pstree, plus the command from each core image.
        List<Object> procs = Json.array(doc.get("processes"));
        List<Object> critTree = Fixtures.critEntries(Fixtures.dir("tree").resolve("pstree.img"));
        assertEquals(critTree.size(), procs.size());
        for (int i = 0; i < procs.size(); i++) {
            Map<String, Object> p = Json.object(procs.get(i));
            Map<String, Object> c = Json.object(critTree.get(i));
            for (String k : List.of("pid", "ppid", "pgid", "sid", "threads")) assertEquals(c.get(k), p.get(k), k);
            Object comm = Json.object(Json.object(Fixtures.critEntries(Fixtures.dir("tree")
                    .resolve("core-" + c.get("pid") + ".img")).getFirst()).get("tc")).get("comm");
            assertEquals(comm, p.get("command"));
        }

        List<Object> gpu = Json.array(doc.get("gpu"));
        Map<String, Object> amd = gpu.stream().map(Json::object)
                .filter(g -> g.get("plugin").equals("amdgpu_plugin")).findFirst().orElseThrow();
        assertEquals(true, amd.get("listed"));
        assertEquals(BigInteger.valueOf(1000L + (3 << 20)), amd.get("total_bytes"));
        assertEquals(List.of(Map.of("name", "amdgpu-kfd-16.img", "bytes", BigInteger.valueOf(1000)),
                Map.of("name", "amdgpu-pages-16-0.img", "bytes", BigInteger.valueOf(3 << 20))), amd.get("files"));
    }

    @Test
    void notACheckpoint() throws Exception {
        Result empty = inspect(tmp.toString());
        assertEquals(InspectCommand.BAD_CHECKPOINT, empty.rc());
        assertEquals("criu-gpu inspect: " + tmp + ": not a criu checkpoint (no inventory.img)\n", empty.err());
        assertEquals("", empty.out());

        Path file = Files.writeString(tmp.resolve("f"), "x");
        assertEquals("criu-gpu inspect: " + file + ": not a directory\n", inspect(file.toString()).err());
        assertEquals("criu-gpu inspect: " + tmp.resolve("nope") + ": no such directory\n",
                inspect(tmp.resolve("nope").toString()).err());
    }

    @Test
    void damagedCheckpointNamesTheFile() throws Exception {
        Path dir = Fixtures.copy("tree", tmp.resolve("t"));
        byte[] pstree = Files.readAllBytes(dir.resolve("pstree.img"));
        Files.write(dir.resolve("pstree.img"), java.util.Arrays.copyOf(pstree, pstree.length - 5));
        Result r = inspect(dir.toString(), "--json");
        assertEquals(InspectCommand.BAD_CHECKPOINT, r.rc());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().startsWith("criu-gpu inspect: " + dir.resolve("pstree.img") + ": entry 3 at offset"),
                r.err());
        assertEquals("", r.out());
    }

    @Test
    void usage() {
        assertEquals(InspectCommand.USAGE, inspect().rc());
        assertEquals(InspectCommand.USAGE, inspect("--yaml", "x").rc());
        assertEquals(InspectCommand.USAGE, inspect("a", "b").rc());
        assertTrue(inspect().err().contains("usage: criu-gpu inspect DIR [--json]"));
    }
}

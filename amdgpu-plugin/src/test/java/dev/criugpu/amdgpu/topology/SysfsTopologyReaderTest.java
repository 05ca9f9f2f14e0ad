package dev.criugpu.amdgpu.topology;

import dev.criugpu.amdgpu.testing.SysfsTree;
import dev.criugpu.api.CriuException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;

import static dev.criugpu.amdgpu.testing.SysfsTree.GiB;
import static dev.criugpu.amdgpu.testing.SysfsTree.PCIE;
import static dev.criugpu.amdgpu.testing.SysfsTree.XGMI;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SysfsTopologyReaderTest {
    @TempDir
    Path root;

    private Topology read() {
        return new SysfsTopologyReader(root).read("Local");
    }

    private static KfdNode byId(Topology t, int id) {
        return t.node(id).orElseThrow();
    }

    @Test
    void readsCpuAndGpuNodesWithPropertiesVramAndLinks() {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 43357).prop("device_id", 0x740c).prop("hive_id", 0xABCDEF0123456789L).vram(64 * GiB, false);
        t.connect(PCIE, 0, 1);
        t.node(1).link(5, 0); // QPI: not kept
        t.write(root);

        Topology topo = read();
        assertEquals(2, topo.nodes().size());
        KfdNode cpu = byId(topo, 0);
        KfdNode gpu = byId(topo, 1);
        assertTrue(cpu.isCpu());
        assertEquals(16, cpu.get(NodeProperty.CPU_CORES_COUNT));
        assertTrue(gpu.isGpu());
        assertEquals(43357, gpu.gpuId());
        assertEquals(0x740c, gpu.get(NodeProperty.DEVICE_ID));
        assertEquals(0xABCDEF0123456789L, gpu.get(NodeProperty.HIVE_ID));
        assertEquals(128, gpu.get(NodeProperty.DRM_RENDER_MINOR));
        assertEquals(64 * GiB, gpu.get(NodeProperty.VRAM_SIZE), "first FB bank after the SYSTEM bank");
        assertEquals(0, gpu.get(NodeProperty.VRAM_PUBLIC));
        assertEquals(List.of(new IoLink(PCIE, 0)), gpu.links());
        assertTrue(topo.isBidirectional(gpu, gpu.links().get(0)));
        assertEquals(gpu, topo.gpuByRenderMinor(128).orElseThrow());
        assertEquals(gpu, topo.gpu(43357).orElseThrow());
    }

    @Test
    void cpuPropertiesStopAtTheCoreCount() {
        new SysfsTree().cpu(0).prop("simd_count", 7).done().write(root);
        // cpu_cores_count comes before simd_count in the file, so simd_count is not read.
        assertEquals(0, byId(read(), 0).get(NodeProperty.SIMD_COUNT));
    }

    @Test
    void linksAreReadInIndexOrder() {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 100);
        for (int i = 0; i < 11; i++) t.node(1).link(PCIE, 50 + i);
        t.write(root);
        List<IoLink> links = byId(read(), 1).links();
        assertEquals(11, links.size());
        for (int i = 0; i < 11; i++) assertEquals(50 + i, links.get(i).nodeTo(), "link " + i);
    }

    @Test
    void skipsNodesWithoutUsableGpuIdAndNonNumericEntries() throws Exception {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 100);
        t.gpu(2, 200).gpuIdText("zz\n");
        t.write(root);
        Files.delete(root.resolve("nodes/0/gpu_id"));
        Files.createDirectories(root.resolve("nodes/extra"));
        Topology topo = read();
        assertEquals(List.of(1), topo.nodes().stream().map(KfdNode::nodeId).toList());
    }

    @Test
    void malformedPropertyLineFailsNamingTheFile() {
        new SysfsTree().gpu(3, 100).rawLine("broken").done().write(root);
        CriuException e = assertThrows(CriuException.class, this::read);
        assertTrue(e.getMessage().contains("nodes/3/properties") && e.getMessage().contains("'broken'"), e.getMessage());
    }

    @Test
    void nonNumericPropertyValueFails() {
        new SysfsTree().gpu(3, 100).rawLine("simd_count many").done().write(root);
        CriuException e = assertThrows(CriuException.class, this::read);
        assertTrue(e.getMessage().contains("simd_count") && e.getMessage().contains("many"), e.getMessage());
    }

    @Test
    void gpuWithoutVramBankFails() {
        new SysfsTree().gpu(2, 100).noVram().done().write(root);
        CriuException e = assertThrows(CriuException.class, this::read);
        assertTrue(e.getMessage().contains("nodes/2/mem_banks") && e.getMessage().contains("no VRAM"), e.getMessage());
    }

    @Test
    void missingTopologyFailsNamingThePath() {
        CriuException e = assertThrows(CriuException.class,
                () -> new SysfsTopologyReader(root.resolve("absent")).read("Local"));
        assertTrue(e.getMessage().contains("absent/nodes"), e.getMessage());
    }

    @Test
    void linkToHiddenNodeIsInvalidAndOneWayLinkIsNotBidirectional() throws Exception {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 100).link(PCIE, 0).link(PCIE, 9); // CPU 0 does not link back; node 9 is hidden
        t.write(root);
        Topology topo = read();
        KfdNode gpu = byId(topo, 1);
        assertTrue(topo.isValid(gpu.links().get(0)));
        assertFalse(topo.isBidirectional(gpu, gpu.links().get(0)));
        assertFalse(topo.isValid(gpu.links().get(1)));
        assertEquals(1, topo.validLinks(gpu).size());
    }

    @Test
    void findsXgmiHivesFromBidirectionalLinksOnly() {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        for (int i = 1; i <= 6; i++) t.gpu(i, 1000 + i);
        for (int i = 1; i <= 6; i++) t.connect(PCIE, 0, i);
        t.connect(XGMI, 1, 2).connect(XGMI, 1, 3).connect(XGMI, 2, 3);
        t.connect(XGMI, 4, 5);
        t.node(6).link(XGMI, 4); // one-way: no hive membership
        t.write(root);
        Topology topo = read();
        List<List<Integer>> hives = topo.hives().stream()
                .map(h -> h.stream().map(KfdNode::nodeId).sorted().toList())
                .sorted(Comparator.comparing(h -> h.get(0))).toList();
        assertEquals(List.of(List.of(1, 2, 3), List.of(4, 5)), hives);
    }
}

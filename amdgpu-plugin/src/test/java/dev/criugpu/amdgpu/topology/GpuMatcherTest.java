package dev.criugpu.amdgpu.topology;

import dev.criugpu.amdgpu.testing.SysfsTree;
import dev.criugpu.api.CriuException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.criugpu.amdgpu.testing.SysfsTree.GiB;
import static dev.criugpu.amdgpu.testing.SysfsTree.PCIE;
import static dev.criugpu.amdgpu.testing.SysfsTree.XGMI;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GpuMatcherTest {
    @TempDir
    Path dir;

    private Topology topo(String name, SysfsTree tree) {
        return new SysfsTopologyReader(tree.write(dir.resolve(name))).read(name);
    }

    /** One CPU (node 0) and GPUs on nodes 1..n with the given gpu ids, each PCIe-linked both ways to the CPU. */
    private static SysfsTree pcieSystem(int... gpuIds) {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        for (int i = 0; i < gpuIds.length; i++) {
            t.gpu(i + 1, gpuIds[i]);
            t.connect(PCIE, 0, i + 1);
        }
        return t;
    }

    private static GpuMapping match(Topology src, Topology dest) {
        return GpuMatcher.match(src, dest, MatchChecks.all());
    }

    private static String failure(Topology src, Topology dest, MatchChecks checks) {
        return assertThrows(CriuException.class, () -> GpuMatcher.match(src, dest, checks)).getMessage();
    }

    @Test
    void identicalSingleGpuMapsToTheLocalId() {
        GpuMapping m = match(topo("ckpt", pcieSystem(0x1111)), topo("local", pcieSystem(0x2222)));
        assertEquals(Map.of(0x1111, 0x2222), m.gpus());
        assertEquals(Map.of(0, 0), m.cpus());
        assertEquals(0x2222, m.localGpu(0x1111));
    }

    @Test
    void mixedDeviceIdsPairByDeviceType() {
        SysfsTree src = pcieSystem(0xa1, 0xa2);
        src.node(1).prop("device_id", 0x740c);
        src.node(2).prop("device_id", 0x738c);
        SysfsTree dest = pcieSystem(0xb1, 0xb2);
        dest.node(1).prop("device_id", 0x738c);
        dest.node(2).prop("device_id", 0x740c);
        assertEquals(Map.of(0xa1, 0xb2, 0xa2, 0xb1), match(topo("ckpt", src), topo("local", dest)).gpus());
    }

    @Test
    void backtracksWhenTheFirstChoiceStarvesALaterGpu() {
        // Only the 32 GiB local GPU can hold the 32 GiB checkpointed one; the 16 GiB one fits either.
        SysfsTree src = pcieSystem(0xa1, 0xa2);
        src.node(1).vram(32 * GiB, true);
        src.node(2).vram(16 * GiB, true);
        SysfsTree dest = pcieSystem(0xb1, 0xb2);
        dest.node(1).vram(16 * GiB, true);
        dest.node(2).vram(32 * GiB, true);
        assertEquals(Map.of(0xa1, 0xb2, 0xa2, 0xb1), match(topo("ckpt", src), topo("local", dest)).gpus());
    }

    /** Two hives of two GPUs; hive members are of one device type per hive. */
    private static SysfsTree twoHives(int firstId, int deviceOfFirstHive, int deviceOfSecondHive) {
        SysfsTree t = pcieSystem(firstId, firstId + 1, firstId + 2, firstId + 3);
        t.node(1).prop("device_id", deviceOfFirstHive);
        t.node(2).prop("device_id", deviceOfFirstHive);
        t.node(3).prop("device_id", deviceOfSecondHive);
        t.node(4).prop("device_id", deviceOfSecondHive);
        return t.connect(XGMI, 1, 2).connect(XGMI, 3, 4);
    }

    @Test
    void hivesMapToHivesOfTheSameDevices() {
        Topology src = topo("ckpt", twoHives(0x10, 0x740c, 0x738c));
        Topology dest = topo("local", twoHives(0x20, 0x738c, 0x740c));
        Map<Integer, Integer> g = match(src, dest).gpus();
        assertEquals(4, g.size());
        assertTrue(List.of(0x22, 0x23).contains(g.get(0x10)) && List.of(0x22, 0x23).contains(g.get(0x11)), g.toString());
        assertTrue(List.of(0x20, 0x21).contains(g.get(0x12)) && List.of(0x20, 0x21).contains(g.get(0x13)), g.toString());
    }

    @Test
    void moreLocalHivesThanCheckpointedOnesUseLeftoverHiveGpusForLooseGpus() {
        // The checkpoint saw 4 GPUs of a bigger machine: 0x12 and 0x13 had XGMI peers outside the container
        // (nodes 7 and 8), so their raw io_links_count equals that of a hive member here.
        SysfsTree s = pcieSystem(0x10, 0x11, 0x12, 0x13).connect(XGMI, 1, 2);
        s.node(3).link(XGMI, 7);
        s.node(4).link(XGMI, 8);
        Topology src = topo("ckpt", s);
        Topology dest = topo("local", twoHives(0x20, 0x738c, 0x738c));
        assertEquals(1, src.hives().size());
        assertEquals(2, dest.hives().size());
        Map<Integer, Integer> g = match(src, dest).gpus();
        assertEquals(4, g.size());
        assertEquals(4, g.values().stream().distinct().count());
        // The checkpointed hive stays within one local hive.
        int a = g.get(0x10);
        int b = g.get(0x11);
        assertTrue((a < 0x22) == (b < 0x22), g.toString());
    }

    @Test
    void moreCheckpointedHivesThanLocalOnesFail() {
        Topology src = topo("ckpt", twoHives(0x10, 0x738c, 0x738c));
        Topology dest = topo("local", pcieSystem(0x20, 0x21, 0x22, 0x23).connect(XGMI, 1, 2));
        assertTrue(failure(src, dest, MatchChecks.all()).contains("2 XGMI hive(s) but this host has 1"));
    }

    @Test
    void checkpointedHiveNeedsALocalHive() {
        Topology src = topo("ckpt", pcieSystem(0x10, 0x11).connect(XGMI, 1, 2));
        Topology dest = topo("local", pcieSystem(0x20, 0x21));
        assertTrue(failure(src, dest, MatchChecks.all()).contains("XGMI hive"));
    }

    @Test
    void bidirectionalCpuLinkCannotBeServedByAOneWayLink() {
        Topology src = topo("ckpt", pcieSystem(0x10));
        SysfsTree d = new SysfsTree();
        d.cpu(0);
        d.gpu(1, 0x20).link(PCIE, 0); // the CPU has no link back
        Topology dest = topo("local", d);
        String msg = failure(src, dest, MatchChecks.all());
        assertTrue(msg.contains("checkpointed GPU 0x0010") && msg.contains("node 1 (gpu 0x0020)")
                && msg.contains("CPU node 0"), msg);
        // Also without the NUMA check: a one-way link never serves a bi-directional one.
        assertTrue(failure(src, dest, MatchChecks.allExcept(MatchCheck.NUMA)).contains("no link can serve"));
    }

    @Test
    void oneWayCheckpointedLinkIsServedByABidirectionalOne() {
        SysfsTree s = new SysfsTree();
        s.cpu(0);
        s.gpu(1, 0x10).link(PCIE, 0);
        assertEquals(Map.of(0x10, 0x20), match(topo("ckpt", s), topo("local", pcieSystem(0x20))).gpus());
    }

    @Test
    void numaCheckKeepsGpusThatSharedACpuOnOneCpu() {
        // Checkpoint: both GPUs on CPU 0. Here: each GPU on its own CPU.
        Topology src = topo("ckpt", pcieSystem(0x10, 0x11));
        SysfsTree d = new SysfsTree();
        d.cpu(0);
        d.cpu(3);
        d.gpu(1, 0x20);
        d.gpu(2, 0x21);
        d.connect(PCIE, 0, 1).connect(PCIE, 3, 2);
        Topology dest = topo("local", d);
        String msg = failure(src, dest, MatchChecks.all());
        assertTrue(msg.startsWith("no assignment gives every checkpointed GPU its own local GPU") && msg.contains("rejected: none"), msg);
        Map<Integer, Integer> g = GpuMatcher.match(src, dest, MatchChecks.allExcept(MatchCheck.NUMA)).gpus();
        assertEquals(2, g.size());
    }

    @Test
    void moreCheckpointedGpusThanLocalOnesFails() {
        String msg = failure(topo("ckpt", pcieSystem(0x10, 0x11)), topo("local", pcieSystem(0x20)), MatchChecks.all());
        assertTrue(msg.contains("used 2 GPU(s) but 1 are visible"), msg);
    }

    @Test
    void fewerCheckpointedGpusThanLocalOnesMapOntoMatchingOnes() {
        SysfsTree local = pcieSystem(0x20, 0x21, 0x22);
        local.node(1).prop("device_id", 0x1111);
        local.node(3).prop("device_id", 0x1111);
        Map<Integer, Integer> g = GpuMatcher.match(topo("ckpt", pcieSystem(0x10)), topo("local", local), MatchChecks.all()).gpus();
        assertEquals(Map.of(0x10, 0x21), g, "the one local GPU of the same model");
    }

    @Test
    void smallerLocalVramFailsUnlessTheCheckIsOff() {
        SysfsTree s = pcieSystem(0x10);
        s.node(1).vram(64 * GiB, true);
        Topology src = topo("ckpt", s);
        Topology dest = topo("local", pcieSystem(0x20));
        String msg = failure(src, dest, MatchChecks.all());
        assertTrue(msg.contains("checkpointed GPU 0x0010") && msg.contains("vram_size 68719476736 > 34359738368")
                && msg.contains("KFD_VRAM_SIZE_CHECK=0"), msg);
        MatchChecks off = MatchChecks.fromEnvironment(Map.of("KFD_VRAM_SIZE_CHECK", "no"), e -> { });
        assertEquals(Map.of(0x10, 0x20), GpuMatcher.match(src, dest, off).gpus());
    }

    @Test
    void newerLocalFirmwareIsFineOlderIsNot() {
        SysfsTree newer = pcieSystem(0x20);
        newer.node(1).prop("fw_version", 99);
        SysfsTree older = pcieSystem(0x21);
        older.node(1).prop("fw_version", 10);
        Topology src = topo("ckpt", pcieSystem(0x10));
        assertEquals(Map.of(0x10, 0x20), match(src, topo("newer", newer)).gpus());
        assertTrue(failure(src, topo("older", older), MatchChecks.all()).contains("fw_version 70 > 10"));
        assertEquals(Map.of(0x10, 0x21),
                GpuMatcher.match(src, topo("older", older), MatchChecks.allExcept(MatchCheck.FW_VERSION)).gpus());
    }

    @Test
    void deviceIdMismatchIsAlwaysFatal() {
        SysfsTree d = pcieSystem(0x20);
        d.node(1).prop("device_id", 0x740f);
        Topology src = topo("ckpt", pcieSystem(0x10));
        MatchChecks none = MatchChecks.allExcept(MatchCheck.values());
        String msg = failure(src, topo("local", d), none);
        assertTrue(msg.contains("device_id 0x738c != 0x740f"), msg);
    }

    @Test
    void capabilityCheckCanBeSwitchedOff() {
        SysfsTree d = pcieSystem(0x20);
        d.node(1).prop("capability", 0x1);
        Topology src = topo("ckpt", pcieSystem(0x10));
        Topology dest = topo("local", d);
        assertTrue(failure(src, dest, MatchChecks.all()).contains("capability"));
        assertEquals(1, GpuMatcher.match(src, dest, MatchChecks.allExcept(MatchCheck.CAPABILITY)).gpus().size());
    }

    @Test
    void environmentBooleansFollowTheDocumentedParsing() {
        List<String> errors = new ArrayList<>();
        MatchChecks c = MatchChecks.fromEnvironment(Map.of("KFD_FW_VER_CHECK", "0", "KFD_NUMA_CHECK", "No",
                "KFD_CAPABILITY_CHECK", "yes", "KFD_VRAM_SIZE_CHECK", "false"), errors::add);
        assertTrue(!c.on(MatchCheck.FW_VERSION) && !c.on(MatchCheck.NUMA));
        assertTrue(c.on(MatchCheck.CAPABILITY) && c.on(MatchCheck.VRAM_SIZE) && c.on(MatchCheck.NUM_GWS));
        assertEquals(1, errors.size());
        assertTrue(errors.get(0).contains("KFD_VRAM_SIZE_CHECK=false"), errors.get(0));
    }
    /** {@code n} GPUs with gpu ids {@code first..first+n-1}, of {@code vramGiB[i]} GiB each. */
    private static SysfsTree sized(int first, long... vramGiB) {
        int[] ids = new int[vramGiB.length];
        for (int i = 0; i < ids.length; i++) ids[i] = first + i;
        SysfsTree t = pcieSystem(ids);
        for (int i = 0; i < ids.length; i++) t.node(i + 1).vram(vramGiB[i] * GiB, true);
        return t;
    }

    private static long[] gib(int n, long each) {
        long[] v = new long[n];
        java.util.Arrays.fill(v, each);
        return v;
    }

    @Test
    void sixteenGpusWithNoMatchingAreRefusedWithoutTryingEveryOrder() {
        // Every checkpointed GPU fits 15 of the 16 local ones, but the 16th local GPU is too small for all of them:
        // trying orders one by one would take 16! attempts.
        Topology src = topo("ckpt", sized(0xa00, gib(16, 32)));
        long[] local = gib(16, 32);
        local[7] = 16;
        Topology dest = topo("local", sized(0xb00, local));
        String why = failure(src, dest, MatchChecks.all());
        assertTrue(why.startsWith("no assignment gives every checkpointed GPU its own local GPU"), why);
        assertEquals(0, GpuMatcher.stepsToDecide(src, dest, MatchChecks.all()), "decided before any pair was tried");
    }

    @Test
    void sixteenGpusWhereTheFirstChoiceStarvesTheLastAreMatchedInAtMostNSquaredSteps() {
        // Only the local 32 GiB GPU (tried first) holds the checkpointed 32 GiB one (tried last): without looking
        // ahead, every order of the other fifteen would be tried first.
        long[] ckpt = gib(16, 16);
        ckpt[0] = 32;
        long[] local = gib(16, 16);
        local[15] = 32;
        Topology src = topo("ckpt", sized(0xa00, ckpt));
        Topology dest = topo("local", sized(0xb00, local));
        GpuMapping m = match(src, dest);
        assertEquals(0xb0f, m.localGpu(0xa00));
        assertEquals(16, new java.util.HashSet<>(m.gpus().values()).size());
        int steps = GpuMatcher.stepsToDecide(src, dest, MatchChecks.all());
        assertTrue(steps <= 16 * 16, steps + " pair checks");
    }
}

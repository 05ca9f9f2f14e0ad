package dev.criugpu.amdgpu.topology;

import dev.criugpu.amdgpu.testing.SysfsTree;
import dev.criugpu.api.CriuException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static dev.criugpu.amdgpu.testing.SysfsTree.PCIE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GpuMapOverrideTest {
    @TempDir
    Path dir;

    private Topology system(String name, int... gpuIds) {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        for (int i = 0; i < gpuIds.length; i++) {
            t.gpu(i + 1, gpuIds[i]);
            t.connect(PCIE, 0, i + 1);
        }
        return new SysfsTopologyReader(t.write(dir.resolve(name))).read(name);
    }

    private static String error(Runnable r) {
        return assertThrows(CriuException.class, r::run).getMessage();
    }

    @Test
    void parsesDecimalAndHexIds() {
        assertEquals(Map.of(16, 0x21, 0x11, 32), GpuMapOverride.parse("16=0x21, 0x11=32").pairs());
    }

    @Test
    void rejectsMalformedText() {
        assertTrue(error(() -> GpuMapOverride.parse("16")).startsWith("KFD_GPU_MAP: '16' is not oldid=newid"));
        assertTrue(error(() -> GpuMapOverride.parse("16=x")).contains("'x' is not a gpu id"));
        assertTrue(error(() -> GpuMapOverride.parse("16=1,16=2")).contains("mapped twice"));
    }

    @Test
    void overrideWinsOverTheMatcherOrder() {
        Topology src = system("ckpt", 0x10, 0x11);
        Topology dest = system("local", 0x20, 0x21);
        GpuMapping m = RestoreGpuMap.decide(src, dest, Map.of("KFD_GPU_MAP", "0x10=0x21,0x11=0x20"), e -> { });
        assertEquals(Map.of(0x10, 0x21, 0x11, 0x20), m.gpus());
    }

    @Test
    void overrideMustCoverEveryGpuAndNameRealOnes() {
        Topology src = system("ckpt", 0x10, 0x11);
        Topology dest = system("local", 0x20, 0x21);
        MatchChecks all = MatchChecks.all();
        assertTrue(error(() -> GpuMapOverride.parse("0x10=0x20").apply(src, dest, all))
                .contains("checkpointed GPU 0x0011 (node 2 (gpu 0x0011)) is not mapped"));
        assertTrue(error(() -> GpuMapOverride.parse("0x10=0x20,0x11=0x21,0x12=0x21").apply(src, dest, all))
                .contains("the checkpoint has no GPU 0x0012"));
        assertTrue(error(() -> GpuMapOverride.parse("0x10=0x20,0x11=0x29").apply(src, dest, all))
                .contains("this host has no GPU 0x0029"));
        assertTrue(error(() -> GpuMapOverride.parse("0x10=0x20,0x11=0x20").apply(src, dest, all))
                .contains("local GPU 0x0020 is used twice"));
    }

    @Test
    void overrideStillChecksDeviceProperties() {
        Topology src = system("ckpt", 0x10);
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 0x20).prop("device_id", 0x1234);
        t.connect(PCIE, 0, 1);
        Topology dest = new SysfsTopologyReader(t.write(dir.resolve("local"))).read("local");
        assertTrue(error(() -> GpuMapOverride.parse("0x10=0x20").apply(src, dest, MatchChecks.all()))
                .contains("GPU 0x0020 cannot stand in for 0x0010: device_id 0x738c != 0x1234"));
    }
}

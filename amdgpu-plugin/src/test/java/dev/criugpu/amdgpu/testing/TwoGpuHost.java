package dev.criugpu.amdgpu.testing;

import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.criugpu.amdgpu.testing.SysfsTree.PCIE;

/** A reset simulator and a host with one CPU and two PCIe GPUs (gpu ids 0x1001, 0x1002); images go to dir/images. */
public record TwoGpuHost(Topology topology, AmdgpuImages images) {
    public static TwoGpuHost create(Path dir) throws IOException {
        KfdSimulator.reset();
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, 0x1001);
        t.gpu(2, 0x1002);
        t.connect(PCIE, 0, 1).connect(PCIE, 0, 2);
        Topology topology = new SysfsTopologyReader(t.write(dir.resolve("sysfs"))).read("Checkpoint");
        Files.createDirectories(dir.resolve("images"));
        return new TwoGpuHost(topology, new AmdgpuImages(dir.resolve("images")));
    }
}

package dev.criugpu.cuda.gpu;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NvidiaGpusTest {
    static String info(String model, String uuid, int minor) {
        return "Model: \t\t " + model + "\nIRQ:   \t\t 0\nGPU UUID: \t " + uuid + "\nVideo BIOS: \t ??.??.??.??.??\n"
                + "Bus Type: \t PCIe\nDMA Size: \t 52 bits\nBus Location: \t 0000:01:00.0\nDevice Minor: \t " + minor
                + "\nGPU Excluded:\t No\n";
    }

    @Test
    void listsGpusByMinorAndReadsRelease(@TempDir Path root) throws IOException {
        Path a = Files.createDirectories(root.resolve("gpus/0000:02:00.0"));
        Path b = Files.createDirectories(root.resolve("gpus/0000:01:00.0"));
        Files.writeString(a.resolve("information"), info("NVIDIA H100 80GB HBM3", "GPU-eea0d83f-ebcd-ac27-6b3e-bec2a19724e6", 1));
        Files.writeString(b.resolve("information"), info("NVIDIA H100 80GB HBM3", "GPU-8f4022ba-e0cb-1298-286e-225c953a7feb", 0));
        Files.writeString(root.resolve("version"),
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@x)\nGCC version: gcc 13\n");
        List<GpuInfo> gpus = NvidiaGpus.list(root);
        assertEquals(2, gpus.size());
        assertEquals(0, gpus.get(0).minor());
        assertEquals("GPU-8f4022ba-e0cb-1298-286e-225c953a7feb", gpus.get(0).uuid().text());
        assertEquals("NVIDIA H100 80GB HBM3", gpus.get(1).model());
        assertEquals("0000:02:00.0", gpus.get(1).busId());
        assertEquals("580.159.04", NvidiaGpus.driverRelease(root).orElseThrow());
        Files.writeString(root.resolve("version"), "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.10  Thu Jan 1\n");
        assertEquals("570.86.10", NvidiaGpus.driverRelease(root).orElseThrow());
    }

    @Test
    void absentDirectoryIsNoGpus(@TempDir Path root) throws IOException {
        assertTrue(NvidiaGpus.list(root).isEmpty());
    }

    @Test
    void brokenInformationNamesTheFile() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> NvidiaGpus.parseInformation("Model: x\n", "b", Path.of("/p/information")));
        assertEquals("/p/information: lacks a Model, GPU UUID or Device Minor line", e.getMessage());
    }

    @Test
    void minorsFromMaps() {
        String maps = """
                7f0000000000-7f0000001000 rw-s 00000000 00:05 1024 /dev/nvidiactl
                7f0000001000-7f0000002000 rw-s 00000000 00:05 1030 /dev/nvidia3
                7f0000002000-7f0000003000 rw-s 00000000 00:05 1027 /dev/nvidia0
                7f0000003000-7f0000004000 rw-s 00000000 00:05 1027 /dev/nvidia0
                7f0000004000-7f0000005000 rw-s 00000000 00:05 1029 /dev/nvidia-uvm
                7f0000005000-7f0000006000 r--p 00000000 08:01 77 /usr/lib/libnvidia12.so
                """;
        assertEquals(List.of(0, 3), TaskGpus.minorsInMaps(maps));
    }
}

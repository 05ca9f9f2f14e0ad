package dev.criugpu.cuda.gpu;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A GPU file is decided by its device numbers, not its name: real device nodes made with mknod (no driver needed to
 * stat them), reached through symbolic links as /proc/PID/map_files and /proc/PID/fd entries are.
 */
class TaskGpusDeviceTest {
    private static Path node(Path dir, String name, String major, String minor) throws Exception {
        Path p = dir.resolve(name);
        Process mk = new ProcessBuilder("mknod", p.toString(), "c", major, minor).redirectErrorStream(true).start();
        String out = new String(mk.getInputStream().readAllBytes());
        assumeTrue(mk.waitFor() == 0, "mknod needs CAP_MKNOD: " + out);
        return p;
    }

    private static Path link(Path dir, Path target) throws Exception {
        return Files.createSymbolicLink(dir.resolve("link-" + target.getFileName()), target);
    }

    @Test
    void theDeviceNumbersDecideNotTheName(@TempDir Path dir) throws Exception {
        Path gpu7 = node(dir, "gpu7", "195", "7");
        Path ctl = node(dir, "ctl", "195", "255");
        Path other = node(dir, "tty", "4", "7");
        Path plain = Files.writeString(dir.resolve("plain"), "not a device");
        assertEquals(OptionalInt.of(7), TaskGpus.gpuMinor(link(dir, gpu7), "/dev/nvidia7"));
        assertEquals(OptionalInt.empty(), TaskGpus.gpuMinor(link(dir, ctl), "/dev/nvidia255"), "nvidiactl is no GPU");
        assertEquals(OptionalInt.empty(), TaskGpus.gpuMinor(link(dir, other), "/dev/nvidia7"), "another driver's device");
        assertEquals(OptionalInt.empty(), TaskGpus.gpuMinor(link(dir, plain), "/dev/nvidia3"), "a file named like one");
        assertEquals(OptionalInt.empty(), TaskGpus.gpuMinor(dir.resolve("gone"), "/dev/nvidia3"), "unmapped meanwhile");
    }

    @Test
    void aNameWithAnyNumberOfDigitsIsNoError() {
        assertEquals(List.of(), TaskGpus.minorsInMaps(
                "7f0000001000-7f0000002000 rw-s 00000000 00:05 1030 /dev/nvidia99999999999\n"
                        + "7f0000002000-7f0000003000 rw-s 00000000 00:05 1031 /dev/nvidia254\n"));
    }
}

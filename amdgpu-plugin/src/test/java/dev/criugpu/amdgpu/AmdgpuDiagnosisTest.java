package dev.criugpu.amdgpu;

import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess;
import dev.criugpu.api.Diagnosis;
import dev.criugpu.api.sys.Syscalls;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/** {@code criu-gpu doctor}'s AMD part over the simulated KFD, and on this host (no AMD GPU). */
class AmdgpuDiagnosisTest {
    @TempDir
    Path dir;

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
    }

    @Test
    void kfdVersionAndTopologyGpusAreReported() {
        Path sysfs = SimulatedGpuProcess.topology(dir.resolve("sysfs"), 0x1001, 0x1002, false);
        Diagnosis d = AmdgpuDiagnosis.run(KfdSimulator.syscalls(), sysfs);
        assertTrue(d.enabled());
        assertEquals("KFD ioctl API 1.11", d.details().getFirst());
        assertEquals(List.of("GPU 0x1001: node 1, renderD128, device 0x738c, VRAM 32768 MiB",
                "GPU 0x1002: node 2, renderD129, device 0x7408, VRAM 32768 MiB"), d.details().subList(1, 3).stream().sorted().toList());
    }

    @Test
    void kfdWithoutCriuSupportIsCalledOut() {
        KfdSimulator.setVersionMinor(7);
        Diagnosis d = AmdgpuDiagnosis.run(KfdSimulator.syscalls(), dir.resolve("no-topology"));
        assertTrue(d.details().getFirst().startsWith("KFD ioctl API 1.7 lacks CRIU support (need 1.8 or newer)"),
                d.details().toString());
        assertTrue(d.details().get(1).startsWith("cannot read the KFD topology: "), d.details().toString());
    }

    @Test
    void hostWithoutKfdIsDisabled() {
        assumeFalse(Files.exists(Path.of("/dev/kfd")), "this host has an AMD GPU");
        Diagnosis d = AmdgpuDiagnosis.run(Syscalls.libc(), dir);
        assertFalse(d.enabled());
        assertEquals("no AMD GPU: /dev/kfd is absent", d.reason());
    }
}

package dev.criugpu.cuda.inherited;

import dev.criugpu.api.DeviceFile;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.Syscalls;
import dev.criugpu.cuda.image.CudaInheritedEntry;
import dev.criugpu.cuda.image.CudaInheritedFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which files and mappings the CUDA plugin takes as inherited NVIDIA references, and what it records of them. The
 * hooks look at the path behind criu's fd, so the test makes a device node whose name starts like an NVIDIA one
 * (root only; backed by the null driver) and opens it as a DataLoader worker would hold it.
 */
class InheritedDevicesTest {
    static final int O_NONBLOCK = 04000;
    static final DeviceFile CHAR_DEVICE = new DeviceFile(5, 6, 0020666, (195L << 8));
    @TempDir
    Path images;
    Path node;
    final Syscalls sys = Syscalls.libc();

    @BeforeEach
    void makeNode() throws Exception {
        Assumptions.assumeTrue(new com.sun.security.auth.module.UnixSystem().getUid() == 0,
                "SKIPPED: needs root to make a /dev/nvidia* node (CI runs as root)");
        node = Path.of("/dev/nvidia-criugpu-test-" + ProcessHandle.current().pid());
        Process p = new ProcessBuilder("mknod", node.toString(), "c", "1", "3").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0, "mknod failed: " + out);
    }

    @AfterEach
    void removeNode() throws Exception {
        if (node != null) Files.deleteIfExists(node);
    }

    @Test
    void nvidiaFilesAndMappingsAreTakenAndRecordedOthersAreNot() throws Exception {
        InheritedDevices d = new InheritedDevices(images);
        int nvidia = sys.open(node.toString(), Syscalls.O_RDWR | O_NONBLOCK);
        int other = sys.open("/dev/null", Syscalls.O_RDWR);
        try {
            assertFalse(d.recorded());
            assertEquals(Errno.NOT_SUPPORTED, d.dumpExtFile(other, 41), "not an NVIDIA device: the next plugin's");
            assertEquals(Errno.NOT_SUPPORTED, d.handleDeviceVma(other, CHAR_DEVICE));
            assertEquals(0, d.dumpExtFile(nvidia, 42));
            assertEquals(0, d.handleDeviceVma(nvidia, CHAR_DEVICE));
            assertTrue(d.recorded());
        } finally {
            sys.close(nvidia);
            sys.close(other);
        }
        CudaInheritedEntry e = InheritedDevices.read(images).orElseThrow();
        assertEquals(List.of(CudaInheritedFile.newBuilder().setId(42).setPath(node.toString())
                .setFlags(Syscalls.O_RDWR | O_NONBLOCK).build()), e.getFilesList());
        assertTrue(e.getMappings());
    }

    @Test
    void aDumpThatMetNoneWritesNothing() throws Exception {
        InheritedDevices d = new InheritedDevices(images);
        int other = sys.open("/dev/null", Syscalls.O_RDWR);
        try {
            assertEquals(Errno.NOT_SUPPORTED, d.dumpExtFile(other, 1));
        } finally {
            sys.close(other);
        }
        assertTrue(InheritedDevices.read(images).isEmpty());
    }

    @Test
    void theNamesOfNvidiaDeviceNodes() {
        for (String p : List.of("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia7", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                "/dev/nvidia-modeset")) {
            assertTrue(InheritedDevices.isNvidiaDevice(p), p);
        }
        for (String p : List.of("/dev/null", "/dev/kfd", "/dev/dri/renderD128", "/tmp/nvidia0")) {
            assertFalse(InheritedDevices.isNvidiaDevice(p), p);
        }
    }
}

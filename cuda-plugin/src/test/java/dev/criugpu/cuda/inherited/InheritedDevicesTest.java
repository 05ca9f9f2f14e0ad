package dev.criugpu.cuda.inherited;

import dev.criugpu.api.DeviceFile;
import dev.criugpu.api.Errno;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.log.CriuLog;
import dev.criugpu.api.sys.Syscalls;
import dev.criugpu.cuda.TestServices;
import dev.criugpu.cuda.image.CudaInheritedEntry;
import dev.criugpu.cuda.image.CudaInheritedFile;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.ImageIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which files and mappings the CUDA plugin takes as inherited NVIDIA references, on real processes: a "CUDA task"
 * (a shell) holds fd 7 on a character device and forks a child, which inherits fd 7 and opens fd 8 on the same device
 * itself; the "checkpoint" closes the parent's fd 7, as the driver's does. There is no NVIDIA device here, so the
 * majors come from a /proc/devices of the test's that names /dev/null's major (1) nvidia-uvm. criu's copy of the
 * child's fd is made as criu's parasite makes it: the same open file (pidfd_getfd).
 */
class InheritedDevicesTest {
    static final int NULL_MAJOR = 1;
    static final int O_NONBLOCK = 04000;
    /** /dev/null as HANDLE_DEVICE_VMA's struct stat gives it: character device 1:3. */
    static final DeviceFile NVIDIA_MAPPING = new DeviceFile(5, 6, 0020666, (NULL_MAJOR << 8) | 3);
    static final DeviceFile OTHER_MAPPING = new DeviceFile(5, 6, 0020666, (5L << 8) | 2);

    @TempDir
    Path images;
    @TempDir
    Path etc;
    final Syscalls sys = Syscalls.libc();
    TestServices services;
    final List<Integer> copies = new ArrayList<>();
    Tree tree;

    @BeforeEach
    void setUp() {
        services = new TestServices(Stage.DUMP, images, InventoryClaim.NONE);
        CriuLog.register("dev.criugpu.cuda", services);
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int fd : copies) sys.close(fd);
        if (tree != null) tree.close();
    }

    /** The parent (fd 7 on /dev/null) and its child (fd 7 inherited, fd 8 its own), both waiting. */
    static final class Tree implements AutoCloseable {
        final Process parent;
        final int child;
        final BufferedReader out;
        final Writer in;

        Tree() throws IOException {
            parent = new ProcessBuilder("bash", "-c", "exec 7<>/dev/null; "
                    + "( exec 8<>/dev/null; echo \"child $BASHPID\"; exec sleep 1000 ) & "
                    + "read -r; exec 7>&-; echo closed; read -r").start();
            out = new BufferedReader(new InputStreamReader(parent.getInputStream(), StandardCharsets.UTF_8));
            in = new java.io.OutputStreamWriter(parent.getOutputStream(), StandardCharsets.UTF_8);
            String line = out.readLine();
            assertTrue(line != null && line.startsWith("child "), "the child did not start: " + line);
            child = Integer.parseInt(line.substring(6));
            // the child's fd 8 exists once it wrote; it holds fd 7 from the fork on
        }

        int parentPid() {
            return (int) parent.pid();
        }

        /** What the driver's checkpoint does to the CUDA task's device files. */
        void checkpointParent() throws IOException {
            in.write("\n");
            in.flush();
            assertEquals("closed", out.readLine());
        }

        @Override
        public void close() throws Exception {
            ProcessHandle.of(child).ifPresent(ProcessHandle::destroyForcibly);
            parent.destroyForcibly().waitFor();
        }
    }

    /** criu's copy of fd {@code fd} of {@code pid}: the same open file, as its parasite sends it. */
    int criuCopy(int pid, int fd) {
        int pidfd = sys.pidfdOpen(pid);
        try {
            int copy = sys.pidfdGetfd(pidfd, fd);
            copies.add(copy);
            return copy;
        } finally {
            sys.close(pidfd);
        }
    }

    InheritedDevices devices(String procDevices) throws IOException {
        Path f = etc.resolve("devices");
        Files.writeString(f, procDevices);
        return new InheritedDevices(images, NvidiaMajors.read(f), sys);
    }

    InheritedDevices withNullAsNvidia() throws IOException {
        return devices("Character devices:\n  1 nvidia-uvm\n  5 /dev/tty\n195 nvidia\n\nBlock devices:\n  7 loop\n");
    }

    /** The dump's hooks up to the page dump: both tasks paused (the parent a CUDA task), the parent checkpointed. */
    InheritedDevices dumpedTree(boolean parentClosesItsFiles) throws Exception {
        tree = new Tree();
        InheritedDevices d = withNullAsNvidia();
        d.paused(tree.parentPid(), true);
        d.paused(tree.child, false);
        d.beforeCheckpoint(tree.parentPid());
        if (parentClosesItsFiles) tree.checkpointParent();
        return d;
    }

    @Test
    void aFileInheritedFromTheCudaTaskIsClaimedAndWrittenOnceAtTheEnd() throws Exception {
        InheritedDevices d = dumpedTree(true);
        int inherited = criuCopy(tree.child, 7);
        assertEquals(0, d.dumpExtFile(inherited, 42));
        assertEquals(0, d.handleDeviceVma(criuCopy(tree.child, 7), NVIDIA_MAPPING));
        assertTrue(d.recorded());
        assertEquals(List.of(), Files.list(images).filter(p -> !p.getFileName().toString().startsWith(".")).toList(),
                "nothing visible before the dump ends");
        d.finish(true);
        assertEquals(List.of(images.resolve(InheritedDevices.IMAGE)), Files.list(images).toList(), "no temporary left");
        CudaInheritedEntry e = InheritedDevices.read(images).orElseThrow();
        assertEquals(List.of(CudaInheritedFile.newBuilder().setId(42).setPath("/dev/null").setFlags(Syscalls.O_RDWR).build()),
                e.getFilesList());
        assertTrue(e.getMappings());
        assertEquals(List.of(), errors());
    }

    @Test
    void aFailedDumpLeavesNoRecordAndNoTemporaryFile() throws Exception {
        InheritedDevices d = dumpedTree(true);
        assertEquals(0, d.dumpExtFile(criuCopy(tree.child, 7), 42));
        d.finish(false);
        assertEquals(List.of(), Files.list(images).toList());
    }

    @Test
    void aFileTheTaskOpenedItselfIsDeclinedWithOneLine() throws Exception {
        InheritedDevices d = dumpedTree(true);
        assertEquals(Errno.NOT_SUPPORTED, d.dumpExtFile(criuCopy(tree.child, 8), 43));
        assertEquals(List.of("ERROR /dev/null: an NVIDIA device, not taken as inherited: no task without CUDA state "
                + "shares this open file with a CUDA task of the tree (the task holding it opened the device itself, "
                + "or the CUDA task was checkpointed before this dump)"), errors());
        assertFalse(d.recorded());
    }

    @Test
    void aFileTheCudaTaskStillHasAfterItsCheckpointIsDeclined() throws Exception {
        InheritedDevices d = dumpedTree(false);
        assertEquals(Errno.NOT_SUPPORTED, d.dumpExtFile(criuCopy(tree.child, 7), 42));
        assertEquals(List.of("ERROR /dev/null: an NVIDIA device, not taken as inherited: CUDA task " + tree.parentPid()
                + " still has it open after its checkpoint, so something other than CUDA uses it there"), errors());
    }

    @Test
    void withoutACudaTaskNothingIsClaimed() throws Exception {
        tree = new Tree();
        InheritedDevices d = withNullAsNvidia();
        d.paused(tree.parentPid(), false); // no usable backend, or no CUDA state: PAUSE_DEVICES declined every task
        d.paused(tree.child, false);
        d.beforeCheckpoint(tree.parentPid());
        tree.checkpointParent();
        assertEquals(Errno.NOT_SUPPORTED, d.dumpExtFile(criuCopy(tree.child, 7), 42));
        assertEquals(Errno.NOT_SUPPORTED, d.handleDeviceVma(criuCopy(tree.child, 7), NVIDIA_MAPPING));
        assertEquals(2, errors().size(), errors().toString());
        assertTrue(errors().stream().allMatch(l -> l.startsWith("ERROR /dev/null: an NVIDIA device, not taken as "
                + "inherited: ") && l.contains("found no CUDA task")), errors().toString());
        d.finish(true);
        assertEquals(List.of(), Files.list(images).toList());
    }

    @Test
    void devicesOfOtherMajorsAreNotOursAndSayNothing() throws Exception {
        // the real /dev/null is not NVIDIA's by the host's /proc/devices, whatever it is called
        InheritedDevices d = devices("Character devices:\n  1 mem\n195 nvidia\n");
        tree = new Tree();
        d.paused(tree.parentPid(), true);
        d.paused(tree.child, false);
        d.beforeCheckpoint(tree.parentPid());
        tree.checkpointParent();
        assertEquals(Errno.NOT_SUPPORTED, d.dumpExtFile(criuCopy(tree.child, 7), 42));
        assertEquals(Errno.NOT_SUPPORTED, d.handleDeviceVma(criuCopy(tree.child, 7), NVIDIA_MAPPING));
        assertEquals(Errno.NOT_SUPPORTED, d.handleDeviceVma(0, OTHER_MAPPING));
        int pipeEnd = criuCopy((int) ProcessHandle.current().pid(), 1);
        assertEquals(Errno.NOT_SUPPORTED, d.dumpExtFile(pipeEnd, 44));
        assertEquals(List.of(), errors());
        assertFalse(d.recorded());
    }

    @Test
    void theMajorsOfNvidiaDevicesComeFromProcDevices() {
        NvidiaMajors m = NvidiaMajors.parse(List.of("Character devices:", "  1 mem", "195 nvidia-frontend",
                "234 nvidia-uvm", "237 nvidia-caps", "238 nvidia-nvswitch", "", "Block devices:", "240 nvidia-fake-block"));
        assertEquals(Set.of(195, 234, 237, 238), m.majors());
        assertEquals(Set.of(195), NvidiaMajors.read(etc.resolve("absent")).majors(), "no module loaded: 195 alone");
        assertTrue(m.isNvidia(new DeviceFile(0, 0, 0020666, 234L << 8)));
        assertFalse(m.isNvidia(new DeviceFile(0, 0, 0060666, 234L << 8)), "a block device is not one");
        assertFalse(m.isNvidia(new DeviceFile(0, 0, 0020666, 1L << 8)));
    }

    @Test
    void aRecordARestoreCannotHonourIsRefusedNamingTheFile() throws Exception {
        Path file = images.resolve(InheritedDevices.IMAGE);
        for (CudaInheritedFile f : List.of(
                CudaInheritedFile.newBuilder().setId(1).setPath("/dev/nvidia0").setFlags(0100 | 02).build(), // O_CREAT
                CudaInheritedFile.newBuilder().setId(1).setPath("/dev/nvidia0").setFlags(03).build())) {
            ImageIO.writeEntries(file, InheritedDevices.MAGIC, List.of(CudaInheritedEntry.newBuilder().addFiles(f).build()));
            ImageException e = assertThrows(ImageException.class, () -> InheritedDevices.read(images));
            assertTrue(e.getMessage().startsWith(file + ": file id 1"), e.getMessage());
        }
        CudaInheritedFile ok = CudaInheritedFile.newBuilder().setId(1).setPath("/dev/nvidia0").setFlags(02 | O_NONBLOCK).build();
        ImageIO.writeEntries(file, InheritedDevices.MAGIC, List.of(CudaInheritedEntry.newBuilder().addFiles(ok).addFiles(ok).build()));
        assertEquals(file + ": file id 1 is recorded twice",
                assertThrows(ImageException.class, () -> InheritedDevices.read(images)).getMessage());
        Files.delete(file);
        Files.createSymbolicLink(file, etc);
        assertEquals(file + ": is a symbolic link, not a regular file; refused",
                assertThrows(ImageException.class, () -> InheritedDevices.read(images)).getMessage());
    }

    List<String> errors() {
        return services.errors();
    }
}

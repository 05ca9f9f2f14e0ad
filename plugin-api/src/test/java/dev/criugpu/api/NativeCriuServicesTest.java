package dev.criugpu.api;

import dev.criugpu.api.bindings.criu_gpu_services;
import dev.criugpu.api.plan.ChildPlan;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link NativeCriuServices#setChildExecutor}: the shim's struct is written only where the shim has the field and
 * the running criu can serve the executor; the full path (criu 4.2.1 exporting what the executor calls) runs in
 * integration-tests' AMD restore.
 */
class NativeCriuServicesTest {
    private final Arena arena = Arena.ofAuto();
    private MemorySegment struct;

    @BeforeEach
    void shimStruct() {
        struct = arena.allocate(criu_gpu_services.layout());
        criu_gpu_services.size(struct, (int) criu_gpu_services.layout().byteSize());
        criu_gpu_services.stage(struct, Stage.RESTORE.id);
        criu_gpu_services.set(struct, "plugin_name", arena.allocateFrom("amdgpu_plugin"));
        criu_gpu_services.set(struct, "plugin_dir", arena.allocateFrom("/usr/lib/criu"));
    }

    @Test
    void aCriuWithoutTheExecutorsFunctionsIsNamedAndTheStructLeftAlone() {
        byte[] before = struct.toArray(JAVA_BYTE);
        NativeCriuServices services = new NativeCriuServices(struct);
        try (ChildPlan plan = new ChildPlan("test")) {
            CriuException e = assertThrows(CriuException.class, () -> services.setChildExecutor(plan));
            assertEquals(Errno.ENOTSUP, e.errno());
            assertTrue(e.getMessage().startsWith("this criu exports no find_unused_fd_pid, fdstore_get: criu 4.2"),
                    e.getMessage());
        }
        assertArrayEquals(before, struct.toArray(JAVA_BYTE));
        assertEquals(Path.of("/usr/lib/criu"), services.pluginDir());
    }

    @Test
    void aShimStructWithoutTheFieldIsLeftAlone() {
        criu_gpu_services.size(struct, (int) criu_gpu_services.offsetOf("child_plan"));
        byte[] before = struct.toArray(JAVA_BYTE);
        try (ChildPlan plan = new ChildPlan("test")) {
            assertFalse(new NativeCriuServices(struct).setChildExecutor(plan));
        }
        assertArrayEquals(before, struct.toArray(JAVA_BYTE));
    }

    @Test
    void fieldsAreOnlyEverAppended() {
        assertEquals(criu_gpu_services.layout().byteSize() - 48, criu_gpu_services.offsetOf("child_plan"));
        assertEquals(criu_gpu_services.layout().byteSize() - 32, criu_gpu_services.offsetOf("plan_region_size"));
        assertEquals(criu_gpu_services.layout().byteSize() - 24, criu_gpu_services.offsetOf("exit_status"));
        assertEquals(criu_gpu_services.layout().byteSize() - 16, criu_gpu_services.offsetOf("launch_helper"));
        assertEquals(criu_gpu_services.layout().byteSize() - 8, criu_gpu_services.offsetOf("park_last_pid"));
    }

    /** Only the restore probe tells the shim where to park pids, and only a shim with the field hears it. */
    @Test
    void theParkingPointIsWrittenOnlyByTheProbeOfAShimThatHasTheField() {
        assertFalse(new NativeCriuServices(struct).parkRestorePidsAfter(5000), "not the probe");
        assertEquals(0, criu_gpu_services.park_last_pid(struct));
        criu_gpu_services.flags(struct, criu_gpu_services.flags(struct) | criu_gpu_services.FLAG_RESTORE_CHECK);
        assertTrue(new NativeCriuServices(struct).parkRestorePidsAfter(5000));
        assertEquals(5000, criu_gpu_services.park_last_pid(struct));
        criu_gpu_services.size(struct, (int) criu_gpu_services.offsetOf("park_last_pid"));
        assertFalse(new NativeCriuServices(struct).parkRestorePidsAfter(6000), "a shim of an older build");
        assertEquals(5000, criu_gpu_services.park_last_pid(struct));
    }

    /** The shim's launcher is taken only from a struct that has the field, and only where it is set. */
    @Test
    void theHelperLauncherComesOnlyFromAShimThatHandsOneOver() {
        assertTrue(new NativeCriuServices(struct).helperLauncher().isEmpty(), "the field is NULL");
        MemorySegment somewhere = MemorySegment.ofAddress(0x1000);
        criu_gpu_services.set(struct, "launch_helper", somewhere);
        assertEquals(Optional.of(somewhere), new NativeCriuServices(struct).helperLauncher());
        criu_gpu_services.size(struct, (int) criu_gpu_services.offsetOf("launch_helper"));
        assertTrue(new NativeCriuServices(struct).helperLauncher().isEmpty(), "a shim of an older build has no such field");
    }

    @Test
    void theExitStatusIsWrittenOnlyWhereTheShimServesIt() {
        NativeCriuServices services = new NativeCriuServices(struct);
        assertFalse(services.exitStatusAfterCleanup(1), "the shim did not say it registered its exit handler");
        assertEquals(0, criu_gpu_services.exit_status(struct));

        criu_gpu_services.flags(struct, criu_gpu_services.FLAG_EXIT_STATUS);
        assertFalse(services.exitStatusAfterCleanup(0), "0 is criu's own status, not a request");
        assertTrue(services.exitStatusAfterCleanup(1));
        assertEquals(1, criu_gpu_services.exit_status(struct));

        criu_gpu_services.exit_status(struct, 0);
        criu_gpu_services.size(struct, (int) criu_gpu_services.offsetOf("exit_status"));
        byte[] before = struct.toArray(JAVA_BYTE);
        assertFalse(new NativeCriuServices(struct).exitStatusAfterCleanup(1), "a struct without the field");
        assertArrayEquals(before, struct.toArray(JAVA_BYTE));
    }

    @Test
    void criuExitGoesToThePluginsOwnShim() {
        criu_gpu_services.flags(struct, criu_gpu_services.FLAG_EXIT_STATUS);
        CriuExit.bind(new NativeCriuServices(struct));
        assertFalse(CriuExit.afterCleanup("no_such_plugin", 1));
        assertEquals(0, criu_gpu_services.exit_status(struct));
        assertTrue(CriuExit.afterCleanup("amdgpu_plugin", 1));
        assertEquals(1, criu_gpu_services.exit_status(struct));
    }

    @Test
    void aShimWithoutTheSharedRegionGivesNone() {
        criu_gpu_services.size(struct, (int) criu_gpu_services.offsetOf("plan_region"));
        assertTrue(new NativeCriuServices(struct).planRegion().isEmpty());
        criu_gpu_services.size(struct, (int) criu_gpu_services.layout().byteSize());
        assertTrue(new NativeCriuServices(struct).planRegion().isEmpty(), "a NULL region is none");
    }

    @Test
    void theImagesDirThatPrepareGetsIsReadThroughCriusFd(@org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
        Path dir = java.nio.file.Files.createDirectory(tmp.resolve("images"));
        java.nio.file.Files.writeString(dir.resolve("pstree.img"), "criu's");
        int fd = dev.criugpu.api.sys.Syscalls.libc().open(dir.toString(), dev.criugpu.api.sys.Syscalls.O_RDONLY
                | dev.criugpu.api.sys.Syscalls.O_DIRECTORY | dev.criugpu.api.sys.Syscalls.O_CLOEXEC);
        try {
            Path named = NativeCriuServices.imageDirOf("/proc/self/fd/" + fd); // as the shim hands it to prepare
            assertEquals(dir.toRealPath(), named);
            java.nio.file.Files.move(dir, tmp.resolve("moved"));
            Path planted = java.nio.file.Files.createDirectory(tmp.resolve("planted"));
            java.nio.file.Files.writeString(planted.resolve("pstree.img"), "planted");
            java.nio.file.Files.createSymbolicLink(named, planted);
            try (var ch = dev.criugpu.api.sys.RegularFiles.openForReading(named.resolve("pstree.img"))) {
                assertEquals("criu's", new String(java.nio.channels.Channels.newInputStream(ch).readAllBytes(),
                        java.nio.charset.StandardCharsets.UTF_8));
            }
        } finally {
            dev.criugpu.api.sys.Syscalls.libc().close(fd);
        }
    }

    @Test
    void standaloneHasNoShimToHandThePlanTo() {
        CriuServices standalone = new StandaloneCriuServices("amdgpu_plugin", Stage.RESTORE, LogLevel.ERROR,
                Path.of("."));
        try (ChildPlan plan = new ChildPlan("test")) {
            assertFalse(standalone.setChildExecutor(plan));
        }
        assertTrue(standalone.fdstore().isEmpty());
    }
}

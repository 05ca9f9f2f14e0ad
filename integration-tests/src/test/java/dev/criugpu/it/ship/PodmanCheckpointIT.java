package dev.criugpu.it.ship;

import dev.criugpu.it.DockerRequired;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static dev.criugpu.it.PluginLogLines.assertOneLine;
import static dev.criugpu.it.PluginLogLines.assertPluginsLoaded;
import static dev.criugpu.it.PluginLogLines.pluginLines;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 7.3: podman (Debian sid's, with crun) checkpoints and restores a container on a host where our .deb is
 * installed. criu, run by crun, loads the plugins from /usr/lib/criu without being told; with no GPU they disable
 * themselves and say why in the dump.log/restore.log podman keeps in the container's userdata dir. The counter
 * continues after an in-place restore and again after a restore from the exported archive into a new container.
 */
@ExtendWith(DockerRequired.class)
class PodmanCheckpointIT {
    private static final String NAME = "counter";
    private static final String EXPORT = "/tmp/counter-checkpoint.tar";

    /**
     * With the JVM started inside criu, criu must still enter the container's mount namespace:
     * the kernel refuses setns() into a mount namespace to a thread whose root/cwd (fs_struct) is shared with other
     * threads, as it is with the JVM's ("Can't setns N/mnt: Invalid argument", measured with podman on the GPU host).
     */
    @Test
    void checkpointsAndRestoresAContainerWithTheJvmRunningInCriu() {
        try (PodmanHost host = PodmanHost.start(DebPackage.fromBuild())) {
            host.exec("dpkg", "-i", PodmanHost.DEB).orFail();
            PodmanCounter.importImage(host);
            PodmanCounter counter = PodmanCounter.run(host, NAME);
            String userdata = host.inspect(NAME, ".StaticDir");

            // podman hands the OCI runtime (and so criu) none of its environment: CRIU_GPU_PLUGIN_FORCE cannot reach
            // the shim. A /dev/kfd node (/dev/null's numbers) passes the AMD plugin's native gate instead, so the JVM
            // starts in criu; its Java side then finds no KFD there and stands aside.
            host.exec("mknod", "/dev/kfd", "c", "1", "3").orFail();
            host.podman("container", "checkpoint", "--keep", NAME).orFail();
            long atDump = counter.lastValue();
            String dumpLog = host.readFile(userdata + "/dump.log");
            assertTrue(dumpLog.contains("amdgpu_plugin: enabled"),
                    "the JVM did not start in criu, so this test shows nothing:\n" + dumpLog);
            assertFalse(dumpLog.contains("Can't setns"), dumpLog);

            host.podman("container", "restore", "--keep", NAME).orFail();
            counter.assertContinuedFrom(atDump);
            host.podman("rm", "--force", "--time", "0", NAME).orFail();
        }
    }

    @Test
    void checkpointsAndRestoresAContainerWithThePluginsLoadedAndDisabled() {
        try (PodmanHost host = PodmanHost.start(DebPackage.fromBuild())) {
            host.exec("dpkg", "-i", PodmanHost.DEB).orFail();
            for (String so : List.of("/usr/lib/criu/cuda_plugin.so", "/usr/lib/criu/amdgpu_plugin.so")) {
                assertTrue(host.exec("test", "-f", so).succeeded(), so + " is not installed");
            }
            PodmanCounter.importImage(host);
            PodmanCounter counter = PodmanCounter.run(host, NAME);
            String userdata = host.inspect(NAME, ".StaticDir");

            host.podman("container", "checkpoint", "--keep", "--export", EXPORT, "--compress", "none", NAME).orFail();
            assertEquals("exited", host.inspect(NAME, ".State.Status"), "container after checkpoint");
            assertEquals("true", host.inspect(NAME, ".State.Checkpointed"), "podman's checkpointed flag");
            long atDump = counter.lastValue();
            String dumpLog = host.readFile(userdata + "/dump.log");
            assertPluginsLoaded(dumpLog, "dump.log");
            assertOneLine(dumpLog, "dump.log", "cuda_plugin: disabled: no NVIDIA GPU\\b.+");
            assertOneLine(dumpLog, "dump.log", "amdgpu_plugin: disabled: no AMD GPU\\b.+");
            List<String> archive = host.exec("tar", "-tf", EXPORT).orFail().stdout().lines().toList();
            for (String entry : List.of("checkpoint/inventory.img", "checkpoint/pstree.img", "checkpoint/pages-1.img",
                    "rootfs-diff.tar", "config.dump", "spec.dump")) {
                assertTrue(archive.contains(entry), EXPORT + " lacks " + entry + ": " + archive);
            }

            host.podman("container", "restore", "--keep", NAME).orFail();
            assertRestoredWithPluginsDisabled(host.readFile(userdata + "/restore.log"));
            counter.assertContinuedFrom(atDump);

            host.podman("rm", "--force", "--time", "0", NAME).orFail();
            assertNotEquals(0, host.podman("container", "exists", NAME).exitCode(), "container still exists after rm");
            host.podman("container", "restore", "--keep", "--import", EXPORT).orFail();
            String importedUserdata = host.inspect(NAME, ".StaticDir");
            assertRestoredWithPluginsDisabled(host.readFile(importedUserdata + "/restore.log"));
            counter.assertContinuedFrom(atDump);
            host.podman("rm", "--force", "--time", "0", NAME).orFail();
        }
    }

    private static void assertRestoredWithPluginsDisabled(String restoreLog) {
        assertPluginsLoaded(restoreLog, "restore.log");
        assertOneLine(restoreLog, "restore.log", "cuda_plugin: disabled: the image holds no CUDA state");
        assertOneLine(restoreLog, "restore.log", "amdgpu_plugin: disabled: the image holds no AMDGPU state");
        assertTrue(restoreLog.lines().noneMatch(l -> l.contains("entered Java")),
                "a disabled plugin entered Java:\n" + pluginLines(restoreLog));
    }
}

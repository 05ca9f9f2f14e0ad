package dev.criugpu.it.ship;

import dev.criugpu.it.DockerRequired;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
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

    /** criu's line for each plugin .so it loaded from its default directory (crun passes no --lib). */
    private static void assertPluginsLoaded(String log, String name) {
        assertOneLine(log, name, "Plugin \"cuda_plugin\" \\(version \\d+ hooks \\d+\\)");
        assertOneLine(log, name, "Plugin \"amdgpu_plugin\" \\(version \\d+ hooks \\d+\\)");
    }

    private static void assertOneLine(String log, String name, String regex) {
        Pattern p = Pattern.compile("^\\(\\s*[\\d.]+\\)\\s+" + regex + "$");
        long n = log.lines().filter(l -> p.matcher(l).matches()).count();
        assertEquals(1, n, "expected one line in " + name + " matching '" + regex + "'; plugin lines:\n" + pluginLines(log));
    }

    private static String pluginLines(String log) {
        return String.join("\n", log.lines().filter(l -> l.contains("plugin")).toList());
    }
}

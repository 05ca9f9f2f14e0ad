package dev.criugpu.it;

import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.InventoryPlugins;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 12, DESIGN rule 11 in criu 4.2.1 as root: a plugin dir one of whose files (the settings, a jar, the AOT
 * cache) its group may write makes each plugin log one refusal line and start no JVM, and a CPU-only dump still
 * succeeds; the same dir put right loads as before; an image that needs the plugin fails to restore with that line.
 * criu's environment does not reach the JVM: JAVA_TOOL_OPTIONS and _JAVA_OPTIONS are kept away from it, and a
 * relative CRIU_GPU_JAVA_HOME is refused. Issue 22: a plugin dir or JDK that is itself fine but reached through a
 * directory or symlink another user owns (who could point it elsewhere after the check) is refused the same way.
 */
@ExtendWith(DockerRequired.class)
class UntrustedPluginFilesIT {
    private static final String COPY = "/opt/untrusted-lib";
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    private static CriuCommand forcedDump(int pid, String images, PluginDirCopy lib) {
        return CriuCommand.dump(pid, images).args("--lib", lib.dir).forced();
    }

    @ParameterizedTest
    @ValueSource(strings = {"java/criu-gpu.cfg", "java/lib/plugin-api.jar", "java/criu-gpu.aot"})
    void aGroupWritableFileStopsTheJvmWithOneLineAndTheDumpStillWorks(String file) {
        CriuContainer criu = shared.get();
        PluginDirCopy lib = PluginDirCopy.make(criu, COPY);
        if (file.endsWith(".aot")) lib.withOptions("-XX:AOTCache=" + lib.path(file));
        lib.chmod("g+w", file);

        String name = "/tmp/untrusted-" + Path.of(file).getFileName();
        CounterWorkload counter = CounterWorkload.startSingle(criu, name);
        CriuRun dump = forcedDump(counter.rootPid(), name + ".img", lib).env("LD_DEBUG", "files").runIn(criu).orFail();
        for (String plugin : HookTrace.PLUGINS) {
            List<String> refusals = dump.logLinesMatching(Pattern.compile(Pattern.quote("Error (" + plugin
                    + "): cannot start the JVM: refusing " + lib.path(file) + ": " + lib.path(file)
                    + " is writable by its group (owner uid 0, mode 0")));
            assertEquals(1, refusals.size(), plugin + " refusal lines; plugin lines:\n"
                    + String.join("\n", dump.logLinesContaining(plugin)));
        }
        String ldDebug = dump.result().stderr();
        assertTrue(ldDebug.contains(lib.path("cuda_plugin.so")), "LD_DEBUG=files shows no plugin being loaded");
        assertEquals(List.of(), ldDebug.lines().filter(l -> l.contains("libjvm")).toList(), "criu loaded the JVM");
        assertEquals(List.of(), dump.logLinesContaining("entered Java"));
        counter.awaitGone();
        assertTrue(criu.fileExists(name + ".img/pages-1.img"), "the CPU-only dump wrote no pages");
        assertNoAgentLeft(criu);

        lib.chmod("g-w", file);
        CounterWorkload again = CounterWorkload.startSingle(criu, name + "-fixed");
        CriuRun fixed = forcedDump(again.rootPid(), name + "-fixed.img", lib).runIn(criu).orFail();
        assertEquals(List.of(), fixed.logLinesContaining("refusing"));
        HookTrace.assertTraced(fixed, HookTrace.CUDA, "PAUSE_DEVICES", HookTrace.pid(again.rootPid()));
        again.awaitGone();
    }

    /**
     * Issue 23: the CUDA agent's command (java/cuda_plugin.helper), which the shim runs before criu's JVM, follows the
     * same rule. Group-writable, the shim does not run it and says why in one line; the JVM starts, and the dump goes
     * on with an agent criu's JVM starts itself.
     */
    @Test
    void aGroupWritableHelperCommandIsNotRunByTheShim() {
        CriuContainer criu = shared.get();
        PluginDirCopy lib = PluginDirCopy.make(criu, COPY);
        String helper = "java/cuda_plugin.helper";
        assertTrue(criu.fileExists(lib.path(helper)), "make-aot.sh wrote no " + helper);
        lib.chmod("g+w", helper);
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/untrusted-helper");
        CriuRun dump = forcedDump(counter.rootPid(), "/tmp/untrusted-helper.img", lib).runIn(criu).orFail();
        assertEquals(1, dump.logLinesContaining("cuda_plugin: no early helper: refusing " + lib.path(helper) + ": "
                + lib.path(helper) + " is writable by its group").size(), String.join("\n", dump.logLinesContaining("cuda_plugin")));
        HookTrace.assertTraced(dump, HookTrace.CUDA, "PAUSE_DEVICES", HookTrace.pid(counter.rootPid()));
        // the agent ran and answered (no CUDA here): criu's JVM started it through the shim's launcher
        assertEquals(1, dump.logLinesContaining("cuda_plugin: disabled: the CUDA agent is not usable: no backend").size(),
                "criu's JVM did not start the agent itself:\n" + String.join("\n", dump.logLinesContaining("cuda_plugin")));
        counter.awaitGone();

        lib.chmod("g-w", helper);
        CounterWorkload again = CounterWorkload.startSingle(criu, "/tmp/untrusted-helper-fixed");
        CriuRun fixed = forcedDump(again.rootPid(), "/tmp/untrusted-helper-fixed.img", lib).runIn(criu).orFail();
        assertEquals(List.of(), fixed.logLinesContaining("no early helper"));
        again.awaitGone();
    }

    /**
     * An agent the shim started (the cfg case: its command passed, criu's JVM did not start) finds its directory gone
     * and ends; one whose command names the refused file was never started.
     */
    private static void assertNoAgentLeft(CriuContainer criu) {
        Eventually.await("no CUDA agent and no helper directory left", java.time.Duration.ofSeconds(20),
                () -> criu.sh("pgrep -f 'dev[.]criugpu[.]cuda[.]agent[.]CudaAgent' || ls -d /tmp/criu-gpu-* 2>/dev/null")
                        .stdout().isBlank(),
                () -> criu.sh("ps -ef; ls -la /tmp").stdout());
    }

    /** One refusal line per plugin, beginning with {@code refusal}; no JVM loaded; the CPU-only dump worked. */
    private static void assertRefusedWithoutJvm(CriuContainer criu, CriuRun dump, CounterWorkload counter,
                                                String images, String refusal) {
        for (String plugin : HookTrace.PLUGINS) {
            List<String> lines = dump.logLinesContaining("Error (" + plugin + "): cannot start the JVM: " + refusal);
            assertEquals(1, lines.size(), plugin + " refusal lines; plugin lines:\n"
                    + String.join("\n", dump.logLinesContaining(plugin)));
            assertEquals(1, dump.logLinesContaining("Error (" + plugin + ")").size(), "more than one error line");
        }
        assertEquals(List.of(), dump.result().stderr().lines().filter(l -> l.contains("libjvm")).toList(),
                "criu loaded the JVM");
        assertEquals(List.of(), dump.logLinesContaining("entered Java"));
        counter.awaitGone();
        assertTrue(criu.fileExists(images + "/pages-1.img"), "the CPU-only dump wrote no pages");
    }

    @ParameterizedTest
    @ValueSource(strings = {"directory", "symlink"})
    void aPluginDirReachedThroughSomethingAnotherUserOwnsIsRefused(String owned) {
        CriuContainer criu = shared.get();
        PluginDirCopy lib = PluginDirCopy.make(criu, COPY);
        // the copy itself is root's and fine; only the way to it belongs to uid 1000
        String link = owned.equals("directory") ? "/tmp/theirs/lib" : "/tmp/their-lib";
        String theirs = owned.equals("directory") ? "/tmp/theirs" : link;
        criu.sh("rm -rf /tmp/theirs /tmp/their-lib && mkdir -p /tmp/theirs && chown 1000 /tmp/theirs && ln -s "
                + lib.dir + " " + link + " && chown -h 1000 " + theirs).orFail();
        String name = "/tmp/through-" + owned;
        CounterWorkload counter = CounterWorkload.startSingle(criu, name);
        CriuRun dump = CriuCommand.dump(counter.rootPid(), name + ".img").args("--lib", link).forced()
                .env("LD_DEBUG", "files").runIn(criu).orFail();
        assertTrue(dump.result().stderr().contains(link + "/cuda_plugin.so"), "criu did not load the plugins");
        assertRefusedWithoutJvm(criu, dump, counter, name + ".img", "refusing " + link + "/java/criu-gpu.cfg: "
                + theirs + " is owned by another user (owner uid 1000, mode ");
    }

    @ParameterizedTest
    @ValueSource(strings = {"directory", "symlink"})
    void aJdkReachedThroughSomethingAnotherUserOwnsIsRefused(String owned) {
        CriuContainer criu = shared.get();
        PluginDirCopy lib = PluginDirCopy.make(criu, COPY);
        String jdk = PluginDir.fromBuild().javaHome().toString();
        String link = owned.equals("directory") ? "/tmp/theirs/jdk" : "/tmp/their-jdk";
        String theirs = owned.equals("directory") ? "/tmp/theirs" : link;
        criu.sh("rm -rf /tmp/theirs /tmp/their-jdk && mkdir -p /tmp/theirs && chown 1000 /tmp/theirs && ln -s "
                + jdk + " " + link + " && chown -h 1000 " + theirs).orFail();
        String name = "/tmp/jdk-through-" + owned;
        CounterWorkload counter = CounterWorkload.startSingle(criu, name);
        CriuRun dump = forcedDump(counter.rootPid(), name + ".img", lib).env("CRIU_GPU_JAVA_HOME", link)
                .env("LD_DEBUG", "files").runIn(criu).orFail();
        assertRefusedWithoutJvm(criu, dump, counter, name + ".img", "refusing " + link + "/lib/server/libjvm.so: "
                + theirs + " is owned by another user (owner uid 1000, mode ");

        // the same JDK named by a root-owned link in a root-owned dir loads
        criu.sh("rm -f /tmp/their-jdk && ln -sfn " + jdk + " /tmp/root-jdk").orFail();
        CounterWorkload again = CounterWorkload.startSingle(criu, name + "-fixed");
        CriuRun fixed = forcedDump(again.rootPid(), name + "-fixed.img", lib).env("CRIU_GPU_JAVA_HOME", "/tmp/root-jdk")
                .runIn(criu).orFail();
        assertEquals(List.of(), fixed.logLinesContaining("refusing"));
        HookTrace.assertTraced(fixed, HookTrace.CUDA, "PAUSE_DEVICES", HookTrace.pid(again.rootPid()));
        again.awaitGone();
    }

    @Test
    void anImageThatNeedsThePluginFailsToRestoreWithTheRefusal(CriuContainer criu, @TempDir Path host)
            throws ImageException {
        PluginDirCopy lib = PluginDirCopy.make(criu, COPY);
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/needs-cuda");
        forcedDump(counter.rootPid(), "/tmp/needs-cuda.img", lib).runIn(criu).orFail();
        counter.awaitDumped();
        String inventory = "/tmp/needs-cuda.img/" + InventoryPlugins.INVENTORY_IMG;
        criu.copyOut(inventory, host.resolve(InventoryPlugins.INVENTORY_IMG));
        InventoryPlugins.setPlugins(host, List.of("cuda_plugin"));
        criu.copyIn(host.resolve(InventoryPlugins.INVENTORY_IMG), inventory);

        lib.chmod("g+w", "java/criu-gpu.cfg");
        CriuRun restore = CriuCommand.restore("/tmp/needs-cuda.img").args("--lib", lib.dir).forced().runIn(criu);
        assertNotEquals(0, restore.result().exitCode(), "an image that needs cuda_plugin restored without its JVM");
        assertEquals(1, restore.logLinesContaining("Error (cuda_plugin): cannot start the JVM: refusing "
                + lib.path("java/criu-gpu.cfg")).size(), restore.logTail(30));
        assertFalse(criu.pidInUse(counter.rootPid()), "the task was restored");
    }

    @Test
    void criusJavaOptionVariablesDoNotReachTheJvmAndStayInCriusEnvironment(CriuContainer criu) {
        PluginDirCopy lib = PluginDirCopy.make(criu, COPY);
        criu.writeFile("/tmp/env-script.sh", "#!/bin/sh\nenv >> /tmp/env-seen\n", 0755);
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/env");
        // either one, if the JVM read it, would stop it from starting
        CriuRun dump = forcedDump(counter.rootPid(), "/tmp/env.img", lib)
                .env("JAVA_TOOL_OPTIONS", "-XX:+NoSuchFlagForCriuGpu").env("_JAVA_OPTIONS", "-Xmx1k")
                .args("--action-script", "/tmp/env-script.sh").runIn(criu).orFail();
        HookTrace.assertTraced(dump, HookTrace.CUDA, "PAUSE_DEVICES", HookTrace.pid(counter.rootPid()));
        assertFalse(dump.result().stderr().contains("Picked up"), dump.result().stderr());
        counter.awaitGone();
        String seen = criu.readFile("/tmp/env-seen");
        assertTrue(seen.contains("JAVA_TOOL_OPTIONS=-XX:+NoSuchFlagForCriuGpu") && seen.contains("_JAVA_OPTIONS=-Xmx1k"),
                "criu's action script lost the variables:\n" + seen);
    }

    @Test
    void aRelativeJavaHomeIsRefused(CriuContainer criu) {
        PluginDirCopy lib = PluginDirCopy.make(criu, COPY);
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/relative");
        CriuRun dump = forcedDump(counter.rootPid(), "/tmp/relative.img", lib)
                .env("CRIU_GPU_JAVA_HOME", "usr/lib/jvm/java-25-openjdk-amd64").runIn(criu).orFail();
        for (String plugin : HookTrace.PLUGINS) {
            assertEquals(1, dump.logLinesContaining("Error (" + plugin + "): cannot start the JVM: the JDK "
                    + "'usr/lib/jvm/java-25-openjdk-amd64' named by CRIU_GPU_JAVA_HOME is not an absolute path").size(),
                    dump.logTail(30));
        }
        counter.awaitGone();
    }
}

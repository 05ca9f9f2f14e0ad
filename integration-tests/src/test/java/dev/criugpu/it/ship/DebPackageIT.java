package dev.criugpu.it.ship;

import dev.criugpu.it.CounterWorkload;
import dev.criugpu.it.CriuCommand;
import dev.criugpu.it.CriuContainer;
import dev.criugpu.it.CriuImage;
import dev.criugpu.it.CriuRun;
import dev.criugpu.it.DockerRequired;
import dev.criugpu.it.HookTrace;
import dev.criugpu.it.SharedCriuContainer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.regex.Pattern;

import static dev.criugpu.it.HookTrace.CUDA;
import static dev.criugpu.it.HookTrace.assertTraced;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 7.1: the .deb on a clean sid container that has criu 4.2.1 and Debian's JDK 25 (no plugin dir mounted).
 * After dpkg -i, plain criu (no --lib) loads the plugins from /usr/lib/criu, they disable themselves for want of a
 * GPU, and the CPU process survives the round trip; forced, the JVM starts from the JDK postinst found; criu-gpu
 * runs from /usr/bin; dpkg --purge leaves the file system as it was before the install.
 */
@ExtendWith(DockerRequired.class)
class DebPackageIT {
    private static final String DEB = "/tmp/criu-java-gpu.deb";
    private static final String DEBIAN_JDK = "/usr/lib/jvm/java-25-openjdk-amd64";
    private static final String JAVA_DIR = "/usr/lib/criu-java-gpu/java";
    /**
     * Everything on the container's root file system but /tmp (this test's own files) and /run (volatile state,
     * where criu caches what it learnt about the kernel: /run/criu.kdat).
     */
    private static final String LIST_FILES = "find / -xdev \\( -path /tmp -o -path /run \\) -prune -o -print | LC_ALL=C sort";

    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.plain(CriuImage.CRIU_4_2_1);

    @Test
    void installsIntoCriusPluginDirWorksAndPurgesWithoutATrace(CriuContainer criu) {
        assertTrue(criu.fileExists(DEBIAN_JDK + "/lib/server/libjvm.so"),
                "the criu image lacks Debian's openjdk-25-jre-headless (integration-tests/criu-image/build.sh)");
        assertTrue(criu.exec("dpkg", "-s", "criu-java-gpu").exitCode() != 0, "the package is installed already");
        criu.copyIn(DebPackage.fromBuild().file(), DEB);
        List<String> before = listFiles(criu);

        String installed = criu.exec("dpkg", "-i", DEB).orFail().stdout();
        assertTrue(installed.contains("criu-java-gpu: plugins use " + DEBIAN_JDK + "; AOT cache built"),
                "dpkg -i output:\n" + installed);
        assertEquals(DEBIAN_JDK, criu.exec("sed", "-n", "s/^java.home=//p", JAVA_DIR + "/criu-gpu.cfg").orFail()
                .stdout().strip(), "java.home postinst wrote");
        List<String> whileInstalled = listFiles(criu);
        for (String f : List.of("/usr/lib/criu/cuda_plugin.so", "/usr/lib/criu/amdgpu_plugin.so", "/usr/lib/criu/java",
                "/usr/bin/criu-gpu", JAVA_DIR + "/criu-gpu.cfg", JAVA_DIR + "/criu-gpu.aot",
                "/usr/lib/criu-java-gpu/python/criu_gpu/__init__.py", "/usr/lib/criu-java-gpu/python/criu_gpu/_version.py",
                JAVA_DIR + "/VERSION")) {
            assertTrue(whileInstalled.contains(f), f + " is not installed");
        }
        assertTrue(whileInstalled.stream().anyMatch(f -> f.matches("/usr/lib/criu-java-gpu/python/criu_gpu-[^/]+-py3-none-any\\.whl")),
                "the criu_gpu wheel is not installed");

        plainCriuLoadsThePluginsDisabled(criu);
        forcedCriuStartsTheInstalledJvm(criu);
        doctorRunsFromUsrBin(criu);
        demoRunsFromUsrBin(criu);

        criu.exec("dpkg", "--purge", "criu-java-gpu").orFail();
        assertNotEquals(0, criu.exec("dpkg", "-s", "criu-java-gpu").exitCode(), "the package is still known to dpkg");
        List<String> after = listFiles(criu);
        assertEquals(List.of(), difference(after, before), "files present after the purge that were not before");
        assertEquals(List.of(), difference(before, after), "files gone after the purge that were there before");
    }

    private static void plainCriuLoadsThePluginsDisabled(CriuContainer criu) {
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/deb-plain");
        CriuRun dump = CriuCommand.dump(counter.rootPid(), "/tmp/deb-plain.img").runIn(criu).orFail();
        List<Long> atDump = counter.awaitDumped();
        assertOneLine(dump, "cuda_plugin: disabled: no NVIDIA GPU\\b.+");
        assertOneLine(dump, "amdgpu_plugin: disabled: no AMD GPU\\b.+");

        CriuRun restore = CriuCommand.restore("/tmp/deb-plain.img").runIn(criu).orFail();
        assertOneLine(restore, "cuda_plugin: disabled: the image holds no CUDA state");
        assertOneLine(restore, "amdgpu_plugin: disabled: the image holds no AMDGPU state");
        assertEquals(List.of(), restore.logLinesContaining("entered Java"), "a disabled plugin entered Java");
        counter.assertContinuedFrom(atDump);
        counter.kill();
    }

    /** Forced past the hardware gate, criu starts the JVM through /usr/lib/criu/java with the JDK postinst chose. */
    private static void forcedCriuStartsTheInstalledJvm(CriuContainer criu) {
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/deb-forced");
        int pid = counter.rootPid();
        CriuRun dump = CriuCommand.dump(pid, "/tmp/deb-forced.img").forced().runIn(criu).orFail();
        List<Long> atDump = counter.awaitDumped();
        assertTraced(dump, CUDA, "PAUSE_DEVICES", HookTrace.pid(pid));
        assertTraced(dump, CUDA, "CHECKPOINT_DEVICES", HookTrace.pid(pid));

        CriuRun restore = CriuCommand.restore("/tmp/deb-forced.img").forced().runIn(criu).orFail();
        HookTrace.assertResumedLate(restore, pid);
        counter.assertContinuedFrom(atDump);
        counter.kill();
    }

    /** The packaged demo uses this host's criu without --lib: criu finds the installed plugins by itself. */
    private static void demoRunsFromUsrBin(CriuContainer criu) {
        String demo = criu.exec("criu-gpu-demo").orFail().stdout();
        for (String expected : List.of("== criu dump (criu 4.2.1)", "== criu restore\n",
                "cuda_plugin: disabled: no NVIDIA GPU", "amdgpu_plugin: disabled: no AMD GPU",
                "cuda_plugin: disabled: the image holds no CUDA state", "restore needs   no plugin",
                "the process continued where it stopped")) {
            assertTrue(demo.contains(expected), "criu-gpu-demo lacks '" + expected + "':\n" + demo);
        }
    }

    private static void doctorRunsFromUsrBin(CriuContainer criu) {
        assertEquals("/usr/bin/criu-gpu", criu.sh("command -v criu-gpu").orFail().stdout().strip());
        String doctor = criu.exec("criu-gpu", "doctor").orFail().stdout();
        for (String expected : List.of("JVM for criu: " + DEBIAN_JDK, "AOT cache: " + JAVA_DIR + "/criu-gpu.aot",
                "cuda_plugin: disabled", "amdgpu_plugin: disabled")) {
            assertTrue(doctor.contains(expected), "criu-gpu doctor lacks '" + expected + "':\n" + doctor);
        }
    }

    private static List<String> listFiles(CriuContainer criu) {
        return criu.sh(LIST_FILES).orFail().stdout().lines().toList();
    }

    private static List<String> difference(List<String> a, List<String> b) {
        List<String> d = new ArrayList<>(a);
        d.removeAll(new HashSet<>(b));
        return d;
    }

    private static void assertOneLine(CriuRun run, String regex) {
        List<String> lines = run.logLinesMatching(Pattern.compile(regex));
        assertEquals(1, lines.size(), "expected one line matching '" + regex + "'; plugin lines in criu's log:\n"
                + String.join("\n", run.logLinesContaining("plugin")));
    }
}

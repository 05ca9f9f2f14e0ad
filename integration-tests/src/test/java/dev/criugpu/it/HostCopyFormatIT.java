package dev.criugpu.it;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CUDA host copy in the plugin's format (issue 54) through real criu 4.2.1: the fake cuda-checkpoint's checkpoint
 * makes the task map 96 MiB of patterned memory, as the driver maps its host copy, on the thread the plugin wakes. The
 * dump must take that memory out of criu's pagemap; a restore without our plugin must be refused by criu itself, the
 * task not created; ours must put the memory back before the CUDA restore, every word as it was.
 */
@ExtendWith(DockerRequired.class)
class HostCopyFormatIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    private final List<Runnable> cleanup = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        cleanup.forEach(Runnable::run);
        cleanup.clear();
    }

    @Test
    void theHostCopyLeavesCriusPagesAndOnlyOurPluginPutsItBack(CriuContainer criu) {
        String dir = "/tmp/host-copy";
        criu.exec("rm", "-rf", dir).orFail();
        FakeCuda.Running t = FakeCuda.startCudaTask(criu, dir, (c, f) -> CounterWorkload.startHostCopy(c, f, 96), cleanup);
        FakeCuda cuda = t.cuda();
        int pid = t.pid();
        cuda.set("FAKE_CUDA_HOST_COPY", dir + "/counter");
        String img = dir + "/img";

        CriuRun dump = cuda.env(CriuCommand.dump(pid, img).withPlugins().forced()).env("CRIU_CUDA_HOST_COPY", "plugin").runIn(criu);
        assertEquals(0, dump.result().exitCode(), dump.result().describe() + "\n" + dump.logTail(40));
        List<Long> atDump = t.counter().awaitDumped();
        assertFalse(dump.logLinesContaining("pid " + pid + ": 96 MiB of host copy kept").isEmpty(), String.join("\n", dump.logLinesContaining("cuda")) + "\n" + String.join("\n", cuda.calls()));
        assertTrue(criu.fileExists(img + "/cuda-hostcopy-" + pid + ".img"));
        assertTrue(criu.sh("grep -c criu_gpu_hostcopy_v1 " + img + "/inventory.img").stdout().strip().equals("1"));
        // what criu restores itself: the pages outside the host copy, well under its 96 MiB
        long criuPages = Long.parseLong(criu.sh("stat -c %s $(ls -v " + img + "/pages-*.img | tail -n1)").orFail().stdout().strip());
        assertTrue(criuPages < 16L << 20, "criu's new pages file holds " + criuPages + " bytes");

        criu.exec("mkdir", "-p", dir + "/no-plugins").orFail();
        CriuRun refused = CriuCommand.restore(img).args("--lib", dir + "/no-plugins").runIn(criu);
        assertNotEquals(0, refused.result().exitCode(), refused.logTail(20));
        assertFalse(refused.logLinesContaining("Missing required plugin: criu_gpu_hostcopy_v1").isEmpty(), refused.logTail(20));
        assertFalse(criu.pidInUse(pid), "the refused restore left pid " + pid);

        CriuRun restore = cuda.env(CriuCommand.restore(img).withPlugins().forced()).runIn(criu);
        assertEquals(0, restore.result().exitCode(), restore.result().describe() + "\n" + restore.logTail(40));
        assertFalse(restore.logLinesContaining("pid " + pid + ": host copy put back, 96 MiB").isEmpty(), restore.logTail(30));
        t.counter().assertContinuedFrom(atDump);
        assertEquals(0, t.counter().verifyHostCopy(), "words of the host copy that differ after the restore");
        assertEquals("running", cuda.state(pid));
    }
}

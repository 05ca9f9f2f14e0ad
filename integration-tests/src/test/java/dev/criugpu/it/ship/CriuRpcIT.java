package dev.criugpu.it.ship;

import dev.criugpu.it.CounterWorkload;
import dev.criugpu.it.CriuContainer;
import dev.criugpu.it.CriuImage;
import dev.criugpu.it.CriuRun;
import dev.criugpu.it.DockerRequired;
import dev.criugpu.it.HookTrace;
import dev.criugpu.it.SharedCriuContainer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.regex.Pattern;

import static dev.criugpu.it.HookTrace.AMDGPU;
import static dev.criugpu.it.HookTrace.CUDA;
import static dev.criugpu.it.HookTrace.PLUGINS;
import static dev.criugpu.it.HookTrace.assertTraced;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 7.2: the plugins behave over criu's RPC interface ({@code criu swrk}, driven through pycriu as podman and
 * runc drive it) as they do on criu's command line: disabled with their reason on a host without GPUs, and, forced,
 * every hook reaches Java and the restore of the forced dump succeeds.
 */
@ExtendWith(DockerRequired.class)
class CriuRpcIT {
    private static final int STAGE_DUMP = 0;
    private static final int STAGE_RESTORE = 2;
    private static final String IMAGES_PLAIN = "/tmp/rpc-plain.img";
    private static final String IMAGES_FORCED = "/tmp/rpc-forced.img";
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    @Test
    void pluginsLoadedThroughRpcLibdirDisableThemselves(CriuContainer criu) {
        PycriuSwrk rpc = PycriuSwrk.install(criu, CriuContainer.PLUGIN_DIR);
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/rpc-plain");
        CriuRun dump = rpc.dump(counter.rootPid(), IMAGES_PLAIN).orFail();
        List<Long> atDump = counter.awaitDumped();
        assertOverRpc(dump, IMAGES_PLAIN, "dump");
        assertOneLine(dump, "cuda_plugin: disabled: no NVIDIA GPU\\b.+");
        assertOneLine(dump, "amdgpu_plugin: disabled: no AMD GPU\\b.+");

        CriuRun restore = rpc.restore(IMAGES_PLAIN).orFail();
        assertOverRpc(restore, IMAGES_PLAIN, "restore");
        assertOneLine(restore, "cuda_plugin: disabled: the image holds no CUDA state");
        assertOneLine(restore, "amdgpu_plugin: disabled: the image holds no AMDGPU state");
        assertEquals(List.of(), restore.logLinesContaining("entered Java"), "a disabled plugin entered Java");
        counter.assertContinuedFrom(atDump);
        counter.kill();
    }

    @Test
    void forcedHooksReachJavaOverRpcAndTheImageRestores(CriuContainer criu) {
        PycriuSwrk rpc = PycriuSwrk.install(criu, CriuContainer.PLUGIN_DIR).forced();
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/rpc-forced");
        int pid = counter.rootPid();
        CriuRun dump = rpc.dump(pid, IMAGES_FORCED).orFail();
        List<Long> atDump = counter.awaitDumped();
        assertOverRpc(dump, IMAGES_FORCED, "dump");
        assertTraced(dump, CUDA, "PAUSE_DEVICES", HookTrace.pid(pid));
        assertTraced(dump, CUDA, "CHECKPOINT_DEVICES", HookTrace.pid(pid));
        for (String plugin : PLUGINS) assertTraced(dump, plugin, "EXIT", HookTrace.exit(STAGE_DUMP, 0));

        CriuRun restore = rpc.restore(IMAGES_FORCED).orFail();
        assertOverRpc(restore, IMAGES_FORCED, "restore");
        assertEquals(List.of(), restore.logLinesContaining("Missing required plugin"), restore.logTail(40));
        HookTrace.assertResumedLate(restore, pid);
        for (String plugin : PLUGINS) assertTraced(restore, plugin, "EXIT", HookTrace.exit(STAGE_RESTORE, 0));
        counter.assertContinuedFrom(atDump);
        counter.kill();
    }

    @Test
    void inventoryHandshakeOverRpcRefusesCudaStateWithoutAGpu(CriuContainer criu) {
        String images = "/tmp/rpc-listed.img";
        PycriuSwrk rpc = PycriuSwrk.install(criu, CriuContainer.PLUGIN_DIR);
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/rpc-listed");
        int pid = counter.rootPid();
        rpc.dump(pid, images).orFail();
        counter.awaitDumped();
        // the image now says it holds CUDA state, as a dump on a GPU host would (pycriu rewrites inventory.img)
        criu.sh("python3 -c \"import pycriu.images as i; p='" + images + "/inventory.img'; "
                + "img=i.load(open(p,'rb')); img['entries'][0]['plugins_entry']={'plugins':['cuda_plugin']}; "
                + "i.dump(img, open(p,'wb'))\"").orFail();

        CriuRun restore = rpc.restore(images);
        assertOverRpc(restore, images, "restore");
        assertTrue(restore.result().exitCode() != 0, "a restore of CUDA state without a GPU succeeded");
        assertOneLine(restore, "Error \\(cuda_plugin\\): image holds CUDA state; no NVIDIA GPU here.*");
        assertEquals(List.of(), restore.logLinesContaining("Missing required plugin"), restore.logTail(40));
        assertTrue(!criu.pidInUse(pid), "pid " + pid + " was restored although the restore was refused");
    }

    /** The request went over RPC and carried the plugin dir: criu logs applying the request's config file. */
    private static void assertOverRpc(CriuRun run, String images, String action) {
        String expected = PycriuSwrk.rpcConfigLine(images, action);
        assertTrue(run.log().contains(expected), "criu's log lacks '" + expected + "':\n" + run.logTail(40));
    }

    private static void assertOneLine(CriuRun run, String regex) {
        List<String> lines = run.logLinesMatching(Pattern.compile(regex));
        assertEquals(1, lines.size(), "expected one line matching '" + regex + "'; plugin lines in criu's log:\n"
                + String.join("\n", run.logLinesContaining("plugin")));
    }
}

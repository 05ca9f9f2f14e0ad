package dev.criugpu.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;

import static dev.criugpu.it.HookTrace.AMDGPU;
import static dev.criugpu.it.HookTrace.CUDA;
import static dev.criugpu.it.HookTrace.PLUGINS;
import static dev.criugpu.it.HookTrace.assertTraced;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 2.2: with CRIU_GPU_PLUGIN_FORCE=1 the gate is skipped, so the JVM starts inside criu. Every hook the
 * plugins register and criu calls reaches Java, the dump and restore still succeed, the process continues, and
 * criu's action scripts (which rely on criu's SIGCHLD handling) run exactly as without plugins.
 */
@ExtendWith(DockerRequired.class)
class ForcedHooksIT {
    private static final int STAGE_DUMP = 0;
    private static final int STAGE_RESTORE = 2;
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    @Test
    void everyCalledHookReachesJavaAndActionScriptsStillRun(CriuContainer criu) {
        List<String> withoutPlugins = actionsOfPlainDumpAndRestore(criu);

        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/forced");
        int pid = counter.rootPid();
        ActionScript actions = new ActionScript(criu, "/tmp/forced-actions.sh", "/tmp/forced-actions");
        CriuRun dump = CriuCommand.dump(pid, "/tmp/forced.img").withPlugins().forced()
                .args("--action-script", actions.script).runIn(criu).orFail();
        List<Long> atDump = counter.awaitDumped();

        assertTraced(dump, CUDA, "PAUSE_DEVICES", HookTrace.pid(pid));
        assertTraced(dump, CUDA, "CHECKPOINT_DEVICES", HookTrace.pid(pid));
        for (String plugin : PLUGINS) assertTraced(dump, plugin, "EXIT", HookTrace.exit(STAGE_DUMP, 0));

        CriuRun restore = CriuCommand.restore("/tmp/forced.img").withPlugins().forced()
                .args("--action-script", actions.script).runIn(criu).orFail();
        counter.assertContinuedFrom(atDump);

        HookTrace.assertResumedLate(restore, pid);
        for (String plugin : PLUGINS) assertTraced(restore, plugin, "EXIT", HookTrace.exit(STAGE_RESTORE, 0));

        assertTrue(actions.actions().containsAll(List.of("pre-dump", "post-dump", "pre-restore", "post-restore")),
                "action script calls: " + actions.actions());
        assertEquals(withoutPlugins, actions.actions(), "action script calls differ from a run without plugins");
        counter.kill();
    }

    private static List<String> actionsOfPlainDumpAndRestore(CriuContainer criu) {
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/forced-baseline");
        ActionScript actions = new ActionScript(criu, "/tmp/baseline-actions.sh", "/tmp/baseline-actions");
        CriuCommand.dump(counter.rootPid(), "/tmp/forced-baseline.img").args("--action-script", actions.script)
                .runIn(criu).orFail();
        counter.awaitGone();
        CriuCommand.restore("/tmp/forced-baseline.img").args("--action-script", actions.script).runIn(criu).orFail();
        counter.kill();
        return actions.actions();
    }
}

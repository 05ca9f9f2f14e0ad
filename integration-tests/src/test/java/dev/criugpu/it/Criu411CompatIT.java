package dev.criugpu.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static dev.criugpu.it.HookTrace.CUDA;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 2.4: the same plugin build loads in criu 4.1.1, whose hook table is one shorter (no POST_FORKING): criu
 * rejects a plugin whose max_hooks exceeds its own count, so this fails unless the shim sizes its descriptor
 * from the running criu. The workload has no inet sockets (criu 4.1.1 cannot dump those on this kernel).
 */
@ExtendWith(DockerRequired.class)
class Criu411CompatIT {
    private static CriuContainer criu;

    @BeforeAll
    static void start() {
        criu = CriuContainer.startWithPlugins(CriuImage.CRIU_4_1_1, PluginDir.fromBuild());
    }

    @AfterAll
    static void stop() {
        if (criu != null) criu.close();
    }

    @Test
    void forcedDumpAndRestoreWorkInCriu411() {
        CommandResult version = criu.exec("criu", "--version").orFail();
        assertTrue(version.stdout().contains("4.1.1"), "image does not run criu 4.1.1: " + version.stdout());

        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/old");
        int pid = counter.rootPid();
        CriuRun dump = CriuCommand.dump(pid, "/tmp/old.img").withPlugins().forced().runIn(criu).orFail();
        counter.awaitGone();
        List<Long> atDump = counter.lastValues();
        ForcedHooksIT.assertTraced(dump, CUDA, "PAUSE_DEVICES", HookTrace.pid(pid));
        ForcedHooksIT.assertTraced(dump, CUDA, "CHECKPOINT_DEVICES", HookTrace.pid(pid));

        CriuRun restore = CriuCommand.restore("/tmp/old.img").withPlugins().forced().runIn(criu).orFail();
        counter.assertContinuedFrom(atDump);
        assertTrue(HookTrace.anyPluginTraced(restore, "RESUME_DEVICES_LATE", HookTrace.pid(pid)),
                "no plugin traced RESUME_DEVICES_LATE(pid=" + pid + "), log:\n" + restore.logTail(60));
        counter.kill();
    }
}

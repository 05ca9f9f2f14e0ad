package dev.criugpu.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

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
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_1_1);

    @Test
    void forcedDumpAndRestoreWorkInCriu411(CriuContainer criu) {
        CommandResult version = criu.exec("criu", "--version").orFail();
        assertTrue(version.stdout().contains("4.1.1"), "image does not run criu 4.1.1: " + version.stdout());

        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/old");
        int pid = counter.rootPid();
        CriuRun dump = CriuCommand.dump(pid, "/tmp/old.img").withPlugins().forced().runIn(criu).orFail();
        List<Long> atDump = counter.awaitDumped();
        HookTrace.assertTraced(dump, CUDA, "PAUSE_DEVICES", HookTrace.pid(pid));
        HookTrace.assertTraced(dump, CUDA, "CHECKPOINT_DEVICES", HookTrace.pid(pid));

        CriuRun restore = CriuCommand.restore("/tmp/old.img").withPlugins().forced().runIn(criu).orFail();
        counter.assertContinuedFrom(atDump);
        HookTrace.assertResumedLate(restore, pid);
        counter.kill();
    }
}

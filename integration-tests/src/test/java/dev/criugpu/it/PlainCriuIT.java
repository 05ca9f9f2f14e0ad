package dev.criugpu.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The harness itself, without our plugins: criu 4.2.1 dumps and restores the counters and they continue. */
@ExtendWith(DockerRequired.class)
class PlainCriuIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.plain(CriuImage.CRIU_4_2_1);

    @Test
    void singleProcessContinuesAfterRestore(CriuContainer criu) {
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/plain-single");
        ActionScript actions = new ActionScript(criu, "/tmp/plain-actions.sh", "/tmp/plain-actions");
        CriuCommand.dump(counter.rootPid(), "/tmp/plain-single.img").args("--action-script", actions.script)
                .runIn(criu).orFail();
        List<Long> atDump = counter.awaitDumped();

        CriuCommand.restore("/tmp/plain-single.img").args("--action-script", actions.script).runIn(criu).orFail();
        counter.assertContinuedFrom(atDump);
        assertEquals(List.of("pre-dump", "post-dump", "pre-restore", "post-restore", "pre-resume", "post-resume"),
                actions.actions(), "criu 4.2.1 action sequence without plugins");
        counter.kill();
    }

    @Test
    void processTreeContinuesAfterRestore(CriuContainer criu) {
        CounterWorkload tree = CounterWorkload.startTree(criu, "/tmp/plain-tree");
        CriuCommand.dump(tree.rootPid(), "/tmp/plain-tree.img").runIn(criu).orFail();
        List<Long> atDump = tree.awaitDumped();

        CriuCommand.restore("/tmp/plain-tree.img").runIn(criu).orFail();
        tree.assertContinuedFrom(atDump);
        tree.kill();
    }
}

package dev.criugpu.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The harness itself, without our plugins: criu 4.2.1 dumps and restores the counters and they continue. */
@ExtendWith(DockerRequired.class)
class PlainCriuIT {
    private static CriuContainer criu;

    @BeforeAll
    static void start() {
        criu = CriuContainer.start(CriuImage.CRIU_4_2_1);
    }

    @AfterAll
    static void stop() {
        if (criu != null) criu.close();
    }

    @Test
    void singleProcessContinuesAfterRestore() {
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/plain-single");
        ActionScript actions = new ActionScript(criu, "/tmp/plain-actions.sh", "/tmp/plain-actions");
        CriuCommand.dump(counter.rootPid(), "/tmp/plain-single.img").args("--action-script", actions.script)
                .runIn(criu).orFail();
        counter.awaitGone();
        List<Long> atDump = counter.lastValues();

        CriuCommand.restore("/tmp/plain-single.img").args("--action-script", actions.script).runIn(criu).orFail();
        counter.assertContinuedFrom(atDump);
        assertEquals(List.of("pre-dump", "post-dump", "pre-restore", "post-restore", "pre-resume", "post-resume"),
                actions.actions(), "criu 4.2.1 action sequence without plugins");
        counter.kill();
    }

    @Test
    void processTreeContinuesAfterRestore() {
        CounterWorkload tree = CounterWorkload.startTree(criu, "/tmp/plain-tree");
        CriuCommand.dump(tree.rootPid(), "/tmp/plain-tree.img").runIn(criu).orFail();
        tree.awaitGone();
        List<Long> atDump = tree.lastValues();

        CriuCommand.restore("/tmp/plain-tree.img").runIn(criu).orFail();
        tree.assertContinuedFrom(atDump);
        tree.kill();
    }
}

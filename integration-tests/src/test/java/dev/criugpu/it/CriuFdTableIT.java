package dev.criugpu.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * DESIGN rule 10: the JVM's threads share criu's fd table, and the kernel waits for an RCU grace period each time it
 * grows a shared table (9-31 ms per dump on the H100 when criu took a task's fds). So the shim grows it before the
 * JVM exists. A task holding 300 files makes criu's table outgrow its 256 slots during the dump; with the JVM in criu
 * the table must already be the shim's 2048 slots, not the 512 a growth during the drain leaves.
 */
@ExtendWith(DockerRequired.class)
class CriuFdTableIT {
    private static final int TASK_FILES = 300;
    private static final int SHIM_SLOTS = 2048;
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    @Test
    void criuTakesATasksManyFilesWithoutGrowingAnFdTableTheJvmShares(CriuContainer criu) {
        CounterWorkload counter = CounterWorkload.startHolding(criu, "/tmp/fdtable", TASK_FILES);
        // criu runs the script as its child: $PPID is criu, whose status tells its fd table and threads
        criu.writeFile("/tmp/fdtable-actions.sh", "#!/bin/sh\necho \"$CRTOOLS_SCRIPT_ACTION"
                + " $(awk '/^FDSize:/ {print $2}' /proc/$PPID/status) $(ls /proc/$PPID/task | wc -l)\""
                + " >> /tmp/fdtable-actions\n", 0755);
        CriuCommand.dump(counter.rootPid(), "/tmp/fdtable.img").withPlugins().forced()
                .args("--action-script", "/tmp/fdtable-actions.sh").runIn(criu).orFail();
        List<Long> atDump = counter.awaitDumped();

        String postDump = criu.readFileIfExists("/tmp/fdtable-actions").lines()
                .filter(l -> l.startsWith("post-dump ")).findFirst().orElseThrow(() -> new AssertionError(
                        "no post-dump line: " + criu.readFileIfExists("/tmp/fdtable-actions")));
        String[] f = postDump.split(" ");
        assertEquals(3, f.length, postDump);
        assertTrue(Integer.parseInt(f[2]) > 1, "criu ran no JVM threads, so this shows nothing: " + postDump);
        assertTrue(Integer.parseInt(f[1]) >= SHIM_SLOTS,
                "criu's fd table grew while the JVM's threads shared it (FDSize, threads): " + postDump);

        CriuCommand.restore("/tmp/fdtable.img").withPlugins().forced().runIn(criu).orFail();
        counter.assertContinuedFrom(atDump);
        counter.kill();
    }
}

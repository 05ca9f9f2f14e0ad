package dev.criugpu.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 2.5: CRIU_GPU_JAVA_HOME names a directory that is no JDK. Each forced plugin logs one clear line saying
 * it cannot start the JVM and why, disables itself, and the dump of the CPU process still succeeds.
 */
@ExtendWith(DockerRequired.class)
class BrokenJavaHomeIT {
    /** Exists in every container, holds no JDK. */
    private static final String NOT_A_JDK = CriuContainer.WORKLOADS;
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    @Test
    void unusableJdkDisablesThePluginsWithOneLineAndTheDumpSucceeds(CriuContainer criu) {
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/nojdk");
        CriuRun dump = CriuCommand.dump(counter.rootPid(), "/tmp/nojdk.img").withPlugins().forced()
                .env("CRIU_GPU_JAVA_HOME", NOT_A_JDK).runIn(criu).orFail();

        for (String plugin : HookTrace.PLUGINS) {
            List<String> lines = dump.logLinesMatching(
                    Pattern.compile("Error \\(" + plugin + "\\): cannot start the JVM: \\S.*"));
            assertEquals(1, lines.size(), "expected one 'Error (" + plugin + "): cannot start the JVM: <reason>' "
                    + "line, all such lines:\n" + String.join("\n", dump.logLinesContaining("cannot start the JVM"))
                    + "\n--- log tail\n" + dump.logTail(40));
            assertTrue(lines.getFirst().contains(NOT_A_JDK), "the error does not name " + NOT_A_JDK + ": " + lines);
        }
        assertEquals(List.of(), dump.logLinesContaining("entered Java"), "a hook entered Java without a JVM");
        assertTrue(criu.fileExists("/tmp/nojdk.img/inventory.img"), "dump wrote no inventory");
        counter.awaitGone();
    }
}

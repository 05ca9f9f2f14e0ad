package dev.criugpu.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 57: a command of the tests that runs past its bound fails its test with what explains it (output so far, its
 * logs, every thread's state, wait channel and tracer) and is killed with its descendants, so the run goes on; one
 * within its bound gives back its output and exit status as it always did.
 */
@ExtendWith(DockerRequired.class)
class ExecBoundIT {
    private static final ExecBound TWO_SECONDS = ExecBound.of(Duration.ofSeconds(2));

    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.plain(CriuImage.CRIU_4_2_1);

    @Test
    void commandWithinItsBoundGivesItsOutputAndStatus(CriuContainer criu) {
        CommandResult r = criu.sh(TWO_SECONDS, "echo out; echo err >&2; exit 3");
        assertEquals(3, r.exitCode(), r.describe());
        assertEquals("out\n", r.stdout());
        assertEquals("err\n", r.stderr(), "the stderr of a command is its own (the bound's pid line taken out)");
    }

    @Test
    void containerCommandPastItsBoundIsExplainedAndKilled(CriuContainer criu) {
        CommandTimedOut e = assertThrows(CommandTimedOut.class, () -> criu.sh(TWO_SECONDS.showingLogs("/tmp/bound-*.log"),
                "echo started >/tmp/bound-a.log; echo so-far; sleep 1001 & sleep 1002; wait"));
        String m = e.getMessage();
        assertTrue(e.summary().contains("still ran after 2 s: killed"), m);
        assertTrue(m.contains("--- stdout so far\nso-far"), m);
        assertTrue(m.contains("--- /tmp/bound-a.log (last 60 lines)\nstarted"), m);
        assertTrue(m.lines().anyMatch(l -> l.matches("\\d+ \\d+ S \\S+ tracer=0 sleep 1002 ?")), m);
        assertFalse(m.contains("printf"), "the threads list shows the script that lists them:\n" + m);
        Eventually.await("the command's processes to end", Duration.ofSeconds(10),
                () -> !criu.exec("ps", "-e", "-o", "args").orFail().stdout().contains("sleep 100"),
                () -> criu.exec("ps", "-e", "-o", "pid,stat,args").stdout());
    }

    @Test
    void hostCommandPastItsBoundIsExplainedAndEnded() {
        CommandTimedOut e = assertThrows(CommandTimedOut.class, () -> HostCommand.run(Path.of("."), TWO_SECONDS,
                List.of("sh", "-c", "echo so-far; sleep 1003")));
        String m = e.getMessage();
        assertTrue(m.contains("--- stdout so far\nso-far"), m);
        assertTrue(m.lines().anyMatch(l -> l.matches("\\d+ \\d+ S \\S+ tracer=0 sleep 1003 ?")), m);
        Eventually.await("sleep 1003 to end", Duration.ofSeconds(10), () -> ProcessHandle.allProcesses()
                .noneMatch(p -> p.info().commandLine().orElse("").contains("sleep 1003")));
    }
}

package dev.criugpu.cuda.config;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CriuCommandLineTest {
    static CriuCommandLine p(String... argv) {
        return CriuCommandLine.parse(List.of(argv));
    }

    @Test
    void defaults() {
        CriuCommandLine c = p("criu", "dump", "-t", "42", "-D", "/img");
        assertFalse(c.treeSurvivesDump());
        assertEquals(10, c.timeoutOrDefault());
        assertFalse(c.rpc());
    }

    /** The tree's pid: the dump's init asks NCCL ranks of that tree to release their communicators before criu freezes it. */
    @Test
    void treeInEveryForm() {
        assertEquals(java.util.OptionalInt.of(42), p("criu", "dump", "-t", "42", "-D", "/img").tree());
        assertEquals(java.util.OptionalInt.of(42), p("criu", "dump", "-Rt42").tree());
        assertEquals(java.util.OptionalInt.of(42), p("criu", "dump", "--tree", "42").tree());
        assertEquals(java.util.OptionalInt.of(42), p("criu", "dump", "--tree=42", "-R").tree());
        assertEquals(java.util.OptionalInt.empty(), p("criu", "dump", "-D", "/img", "--log-file", "-t").tree());
        assertEquals(java.util.OptionalInt.empty(), p("criu", "dump", "-t", "x").tree());
        assertEquals(java.util.OptionalInt.empty(), p("criu", "swrk", "3").tree());
    }

    @Test
    void timeoutForms() {
        assertEquals(30, p("criu", "dump", "--timeout", "30", "-t", "1").timeoutOrDefault());
        assertEquals(5, p("criu", "dump", "--timeout=5").timeoutOrDefault());
        assertEquals(7, p("criu", "dump", "--time", "7").timeoutOrDefault());
        assertEquals(0, p("criu", "dump", "--timeout", "0").timeoutOrDefault());
        var e = assertThrows(IllegalArgumentException.class, () -> p("criu", "dump", "--timeout", "soon"));
        assertEquals("criu --timeout 'soon' is not a number of seconds", e.getMessage());
    }

    @Test
    void leaveRunningAndStoppedInEveryForm() {
        assertTrue(p("criu", "dump", "-R", "-t", "1").leaveRunning());
        assertTrue(p("criu", "dump", "-Rv4").leaveRunning());
        assertTrue(p("criu", "dump", "--leave-running").leaveRunning());
        assertTrue(p("criu", "dump", "--leave-r").leaveRunning());
        assertTrue(p("criu", "dump", "-s").treeSurvivesDump());
        assertTrue(p("criu", "dump", "--leave-stopped").leaveStopped());
    }

    @Test
    void optionValuesAreNotOptions() {
        // -v's optional argument is attached: "-v4R" is verbosity "4R", not -R
        assertFalse(p("criu", "dump", "-v4R").leaveRunning());
        // -t takes the next word; -D's attached value "R" is a directory
        assertFalse(p("criu", "dump", "-DR", "-t", "1").leaveRunning());
        assertFalse(p("criu", "dump", "--images-dir", "-R").leaveRunning());
        assertFalse(p("criu", "dump", "-o", "-R").leaveRunning());
        // the ambiguous prefix "--leave" is neither
        assertFalse(p("criu", "dump", "--leave").treeSurvivesDump());
    }

    @Test
    void theLocksGetHalfOfCriusTimeoutAndCriuKeepsTheRestForItsSeize() {
        assertEquals(5_000, p("criu", "dump", "-t", "1").lockBudgetMs(), "criu's default of 10 s");
        assertEquals(5_000, CriuCommandLine.UNKNOWN.lockBudgetMs());
        assertEquals(15_000, p("criu", "dump", "--timeout", "30").lockBudgetMs());
        assertEquals(500, CriuCommandLine.lockBudgetMs(1));
        assertEquals(5_000, CriuCommandLine.lockBudgetMs(CriuCommandLine.DEFAULT_TIMEOUT_SECONDS));
    }

    @Test
    void timeoutZeroMeansNoAlarmOfCriusAndTheLocksGetTenSeconds() {
        assertEquals(10_000, p("criu", "dump", "--timeout", "0").lockBudgetMs());
        assertEquals(10_000, CriuCommandLine.lockBudgetMs(0));
    }

    @Test
    void largeTimeoutsDoNotOverflow() {
        // 2147484 s * 1000 is past Integer.MAX_VALUE: the old "* 1000" went negative
        assertEquals(1_073_742_000, CriuCommandLine.lockBudgetMs(2_147_484));
        assertEquals(1_073_741_000, CriuCommandLine.lockBudgetMs(2_147_482));
        assertEquals(Integer.MAX_VALUE, CriuCommandLine.lockBudgetMs(4_294_968));
        assertEquals(Integer.MAX_VALUE, CriuCommandLine.lockBudgetMs(Integer.MAX_VALUE));
        assertEquals(Integer.MAX_VALUE, p("criu", "dump", "--timeout", Integer.toString(Integer.MAX_VALUE)).lockBudgetMs());
        assertThrows(IllegalArgumentException.class, () -> CriuCommandLine.lockBudgetMs(-1));
    }

    @Test
    void rpcWorkers() {
        assertTrue(p("criu", "swrk", "3").rpc());
        assertTrue(p("/usr/sbin/criu", "service", "--address", "/run/criu.sock").rpc());
    }

    @Test
    void splitsProcCmdline() {
        byte[] raw = "criu\0dump\0-R\0".getBytes(StandardCharsets.UTF_8);
        assertEquals(List.of("criu", "dump", "-R"), CriuCommandLine.split(raw));
    }
}

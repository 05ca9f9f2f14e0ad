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

    /** criu's config files, in criu's order, under argv (config.c): what criu itself will use. */
    @Test
    void configFilesCountAsCriuCountsThem(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path global = dir.resolve("global.conf");
        java.nio.file.Files.writeString(global, "# the host's defaults\n  leave-running   # so that jobs go on\ntimeout 20\n");
        java.nio.file.Path home = dir.resolve("home");
        java.nio.file.Files.createDirectories(home.resolve(".criu"));
        java.nio.file.Files.writeString(home.resolve(".criu/default.conf"), "timeout \"30\"\n\ntcp-established\n");
        java.nio.file.Path env = dir.resolve("env.conf");
        java.nio.file.Files.writeString(env, "timeout 40\n");
        java.nio.file.Path given = dir.resolve("given.conf");
        java.nio.file.Files.writeString(given, "timeout\t50\n");
        java.util.Map<String, String> vars = java.util.Map.of("HOME", home.toString());

        CriuCommandLine c = CriuCommandLine.parse(CriuCommandLine.withConfigFiles(List.of("criu", "dump", "-t", "7"), vars, global));
        assertTrue(c.leaveRunning(), "leave-running of the global file");
        assertEquals(30, c.timeoutOrDefault(), "the user's file after the global one");
        assertEquals(java.util.OptionalInt.of(7), c.tree());

        c = CriuCommandLine.parse(CriuCommandLine.withConfigFiles(List.of("criu", "dump", "--timeout", "60"), vars, global));
        assertEquals(60, c.timeoutOrDefault(), "the command line wins");

        c = CriuCommandLine.parse(CriuCommandLine.withConfigFiles(List.of("criu", "dump"),
                java.util.Map.of("HOME", home.toString(), "CRIU_CONFIG_FILE", env.toString()), global));
        assertEquals(40, c.timeoutOrDefault(), "CRIU_CONFIG_FILE after both default files");

        c = CriuCommandLine.parse(CriuCommandLine.withConfigFiles(List.of("criu", "dump", "--config", given.toString()), vars, global));
        assertFalse(c.leaveRunning(), "--config leaves the default files out");
        assertEquals(50, c.timeoutOrDefault());

        c = CriuCommandLine.parse(CriuCommandLine.withConfigFiles(List.of("criu", "dump", "--no-default-config"), vars, global));
        assertFalse(c.leaveRunning());
        assertEquals(10, c.timeoutOrDefault());

        c = CriuCommandLine.parse(CriuCommandLine.withConfigFiles(List.of("criu", "dump"),
                java.util.Map.of("HOME", dir.resolve("nowhere").toString()), dir.resolve("missing.conf")));
        assertFalse(c.leaveRunning(), "missing files are skipped, as criu skips them");
    }

    @Test
    void theNetworkNamespaceARestoreJoins() {
        java.util.Optional<java.nio.file.Path> none = java.util.Optional.empty();
        assertEquals(none, p("criu", "restore", "-D", "/img").joinNetNs());
        assertEquals(java.util.Optional.of(java.nio.file.Path.of("/proc/77/ns/net")),
                p("criu", "restore", "--join-ns", "net:77").joinNetNs());
        assertEquals(java.util.Optional.of(java.nio.file.Path.of("/run/netns/job")),
                p("criu", "restore", "--join-ns=uts:/run/utsns/x", "--join-ns=net:/run/netns/job,extra", "-J", "ipc:9")
                        .joinNetNs(), "the net entry among others, its options cut off");
        assertEquals(java.util.Optional.of(java.nio.file.Path.of("/run/netns/b")),
                p("criu", "restore", "-Jnet:/run/netns/b", "-D", "/img").joinNetNs(), "attached to -J");
        assertEquals(none, p("criu", "restore", "--join-ns", "net:").joinNetNs(), "criu refuses that itself");
        assertEquals(none, p("criu", "restore", "--join-ns", "net:-3").joinNetNs());
        assertEquals(none, p("criu", "restore", "-D", "--join-ns", "net:5").joinNetNs(), "the images dir named so");
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
        // criu's title once an RPC request arrived (libbsd's setproctitle): one string, options unknown here
        assertTrue(p("criu: dump --rpc -t 1234").rpc());
        assertTrue(p("criu: restore --rpc").rpc());
        assertEquals(java.util.OptionalInt.empty(), p("criu: dump --rpc -t 1234").tree());
        assertFalse(p("criu: dump --rpc-like").rpc());
        assertFalse(p("criu", "dump", "-t", "1", "--rpc").rpc());
        assertTrue(p("/usr/sbin/criu", "service", "--address", "/run/criu.sock").rpc());
    }

    @Test
    void splitsProcCmdline() {
        byte[] raw = "criu\0dump\0-R\0".getBytes(StandardCharsets.UTF_8);
        assertEquals(List.of("criu", "dump", "-R"), CriuCommandLine.split(raw));
    }
}

package dev.criugpu.cuda.config;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static dev.criugpu.cuda.config.CriuCommandLine.AfterDump.KILLED;
import static dev.criugpu.cuda.config.CriuCommandLine.AfterDump.RUNNING;
import static dev.criugpu.cuda.config.CriuCommandLine.AfterDump.STOPPED;
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

        CriuCommandLine c = CriuCommandLine.parse(List.of("criu", "dump", "-t", "7"), vars, global);
        assertEquals(RUNNING, c.afterDump(), "leave-running of the global file");
        assertEquals(30, c.timeoutOrDefault(), "the user's file after the global one");
        assertEquals(java.util.OptionalInt.of(7), c.tree());

        c = CriuCommandLine.parse(List.of("criu", "dump", "--timeout", "60"), vars, global);
        assertEquals(60, c.timeoutOrDefault(), "the command line wins");

        c = CriuCommandLine.parse(List.of("criu", "dump"),
                java.util.Map.of("HOME", home.toString(), "CRIU_CONFIG_FILE", env.toString()), global);
        assertEquals(40, c.timeoutOrDefault(), "CRIU_CONFIG_FILE after both default files");

        c = CriuCommandLine.parse(List.of("criu", "dump", "--config", given.toString()), vars, global);
        assertEquals(KILLED, c.afterDump(), "--config leaves the default files out");
        assertEquals(50, c.timeoutOrDefault());

        c = CriuCommandLine.parse(List.of("criu", "dump", "--no-default-config"), vars, global);
        assertEquals(KILLED, c.afterDump());
        assertEquals(10, c.timeoutOrDefault());

        c = CriuCommandLine.parse(List.of("criu", "dump"),
                java.util.Map.of("HOME", dir.resolve("nowhere").toString()), dir.resolve("missing.conf"));
        assertFalse(c.treeSurvivesDump(), "missing files are skipped, as criu skips them");
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
        // criu's atoi into an unsigned int: no number is 0 (no alarm), a negative one past any lock
        assertEquals(0, p("criu", "dump", "--timeout", "soon").timeoutOrDefault());
        assertEquals(12, p("criu", "dump", "--timeout", "12s").timeoutOrDefault());
        assertEquals(Integer.MAX_VALUE, p("criu", "dump", "--timeout", "-5").timeoutOrDefault());
    }

    @Test
    void leaveRunningAndStoppedInEveryForm() {
        assertEquals(RUNNING, p("criu", "dump", "-R", "-t", "1").afterDump());
        assertEquals(RUNNING, p("criu", "dump", "-Rv4").afterDump());
        assertEquals(RUNNING, p("criu", "dump", "--leave-running").afterDump());
        assertEquals(RUNNING, p("criu", "dump", "--leave-r").afterDump());
        assertTrue(p("criu", "dump", "-s").treeSurvivesDump());
        assertEquals(STOPPED, p("criu", "dump", "--leave-stopped").afterDump());
        assertEquals(STOPPED, p("criu", "dump", "-R", "-s").afterDump(), "the last one, as criu's final_state");
    }

    @Test
    void optionValuesAreNotOptions() {
        // -v's optional argument is attached: "-v4R" is verbosity "4R", not -R
        assertFalse(p("criu", "dump", "-v4R").treeSurvivesDump());
        // -t takes the next word; -D's attached value "R" is a directory
        assertFalse(p("criu", "dump", "-DR", "-t", "1").treeSurvivesDump());
        assertFalse(p("criu", "dump", "--images-dir", "-R").treeSurvivesDump());
        assertFalse(p("criu", "dump", "-o", "-R").treeSurvivesDump());
    }

    /** criu declares these two optional_argument: getopt_long takes their value only after '='. */
    @Test
    void theWordAfterManageCgroupsOrCpuCapIsAnOptionOfItsOwn() {
        for (List<String> argv : List.of(List.of("criu", "dump", "--manage-cgroups", "-R", "-t", "1"),
                List.of("criu", "dump", "--cpu-cap", "-R", "-t", "1"),
                List.of("criu", "dump", "--manage-cgroups=full", "-R", "-t", "1"),
                List.of("criu", "dump", "--cpu-cap=fpu", "-R", "-t", "1"))) {
            CriuCommandLine c = CriuCommandLine.parse(argv);
            assertEquals(RUNNING, c.afterDump(), argv.toString());
            assertEquals(java.util.Optional.empty(), c.doubt(), argv.toString());
            assertEquals(java.util.OptionalInt.of(1), c.tree(), argv.toString());
        }
    }

    /** Options that take a value take the next word, even one that looks like an option. */
    @Test
    void eachValueTakingOptionTakesTheWordAfterIt() {
        for (String o : List.of("ghost-limit", "skip-mnt", "feature", "close", "libdir", "tls-cacert", "tls-cacrl",
                "tls-cert", "tls-key", "images-dir", "log-file", "external", "network-lock", "config")) {
            CriuCommandLine c = p("criu", "dump", "--" + o, "-R", "-t", "1");
            assertEquals(KILLED, c.afterDump(), o);
            assertFalse(c.treeSurvivesDump(), o);
            assertEquals(java.util.OptionalInt.of(1), c.tree(), o);
            assertEquals(RUNNING, p("criu", "dump", "--" + o, "--leave-stopped", "-R").afterDump(), o);
        }
        assertFalse(p("criu", "dump", "--page-server", "-R").afterDump() == KILLED, "--page-server takes no value");
    }

    /** What criu would not take as written means its options are not known here: the tree is taken to survive. */
    @Test
    void anOptionCriuDoesNotTakeMakesTheTreeSurvive() {
        for (String[] argv : List.of(new String[] {"criu", "dump", "--frobnicate", "x", "-t", "1"},
                new String[] {"criu", "dump", "--leave", "-t", "1"}, new String[] {"criu", "dump", "-Z", "-t", "1"},
                new String[] {"criu", "dump", "-t", "1", "--images-dir"})) {
            CriuCommandLine c = p(argv);
            assertTrue(c.doubt().isPresent(), List.of(argv).toString());
            assertTrue(c.treeSurvivesDump(), List.of(argv).toString());
        }
        assertTrue(CriuCommandLine.UNKNOWN.treeSurvivesDump(), "criu's cmdline unreadable");
    }

    /** Each config file is read on its own, as criu runs getopt_long over each: one file's words end in it. */
    @Test
    void configFilesAreReadEachOnItsOwn(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path first = java.nio.file.Files.writeString(dir.resolve("first.conf"),
                "tcp-established --\nlog-pid swrk\n");
        java.nio.file.Path second = java.nio.file.Files.writeString(dir.resolve("second.conf"), "leave-running\n");
        CriuCommandLine c = CriuCommandLine.parse(List.of("criu", "dump", "--config", second.toString(), "-t", "3"),
                java.util.Map.of("CRIU_CONFIG_FILE", first.toString()), dir.resolve("none.conf"));
        assertEquals(RUNNING, c.afterDump(), "the first file's \"--\" ends its own options only");
        assertFalse(c.rpc(), "a word of a config file is not criu's command");
        assertEquals(java.util.Optional.empty(), c.doubt());
        assertEquals(java.util.OptionalInt.of(3), c.tree());
    }

    @Test
    void aConfigFileWithLeaveRunningOnItsOwnLine(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path f = java.nio.file.Files.writeString(dir.resolve("c.conf"), "# ours\nleave-running\ntimeout 30\n");
        CriuCommandLine c = CriuCommandLine.parse(List.of("criu", "dump", "-t", "3"),
                java.util.Map.of("CRIU_CONFIG_FILE", f.toString()), dir.resolve("none.conf"));
        assertEquals(RUNNING, c.afterDump());
        assertEquals(30, c.timeoutOrDefault());
    }

    /** A config file that cannot be read as criu read it leaves criu's options in doubt. */
    @Test
    void aConfigFileNotReadMakesTheTreeSurvive(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path big = java.nio.file.Files.writeString(dir.resolve("big.conf"), "#".repeat(2 << 20));
        java.nio.file.Path twoValues = java.nio.file.Files.writeString(dir.resolve("two.conf"), "tree 1 2\n");
        for (java.nio.file.Path f : List.of(dir, big, twoValues)) {
            CriuCommandLine c = CriuCommandLine.parse(List.of("criu", "dump", "-t", "3"),
                    java.util.Map.of("CRIU_CONFIG_FILE", f.toString()), dir.resolve("none.conf"));
            assertTrue(c.treeSurvivesDump(), f.toString());
            assertTrue(c.doubt().orElseThrow().contains(f.toString()), c.doubt().toString());
        }
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

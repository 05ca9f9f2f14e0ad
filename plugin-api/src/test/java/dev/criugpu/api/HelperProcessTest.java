package dev.criugpu.api;

import dev.criugpu.api.sys.Sockets;
import dev.criugpu.api.sys.Syscalls;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A helper started the way the CUDA agent is: not our child, a session of its own, deaf to Ctrl-C, one end of a
 * socketpair as its fd 3 (DESIGN rule 11), what it prints in a memfd, nothing of ours in /tmp.
 */
class HelperProcessTest {
    private static final String SELF = Long.toString(ProcessHandle.current().pid());

    @org.junit.jupiter.api.BeforeAll
    static void launcher() {
        LauncherForTests.install();
    }

    static String[] stat(long pid) throws IOException {
        String s = Files.readString(Path.of("/proc/" + pid + "/stat"));
        return s.substring(s.lastIndexOf(')') + 2).split(" ");
    }

    static long sigIgn(long pid) throws IOException {
        return Long.parseLong(Files.readAllLines(Path.of("/proc/" + pid + "/status")).stream()
                .filter(l -> l.startsWith("SigIgn:")).findFirst().orElseThrow().substring(7).trim(), 16);
    }

    @Test
    void theHelperIsNotOurChildHasItsOwnSessionIgnoresCtrlCAndHoldsOnlyFdsWeHandedIt() throws Exception {
        try (HelperProcess helper = HelperProcess.start(EchoHelper.class.getName(), List.of("-Xrs"), List.of(SELF))) {
            String first = helper.readLine();
            assertTrue(first.startsWith("pid "), first);
            long pid = Long.parseLong(first.substring(4));
            assertEquals(pid, helper.pid(), "the identity its starter said");
            assertTrue(helper.alive());
            String[] f = stat(pid);
            assertNotEquals(ProcessHandle.current().pid(), Long.parseLong(f[1]), "it is our child");
            assertNotEquals(Long.parseLong(stat(ProcessHandle.current().pid())[3]), Long.parseLong(f[3]), "it shares our session");
            assertTrue((sigIgn(pid) & (1L << 1)) != 0, "SIGINT is not ignored: Ctrl-C meant for criu would end it");
            assertEquals("/dev/null", Files.readSymbolicLink(Path.of("/proc/" + pid + "/fd/0")).toString());
            for (int fd : new int[] {1, 2}) {
                String out = Files.readSymbolicLink(Path.of("/proc/" + pid + "/fd/" + fd)).toString();
                assertTrue(out.startsWith("/memfd:criu-gpu-helper-output"), "fd " + fd + ": " + out);
            }
            assertTrue(Files.readSymbolicLink(Path.of("/proc/" + pid + "/fd/3")).toString().startsWith("socket:"));
            // the JVM's own files aside, nothing of ours under /tmp: no socket path, no output or pid files
            try (var fds = Files.list(Path.of("/proc/" + pid + "/fd"))) {
                for (Path fd : fds.toList()) {
                    String target = Files.readSymbolicLink(fd).toString();
                    assertFalse(target.startsWith("/tmp/") && !target.contains("hsperf"), fd + " -> " + target);
                }
            }
            assertFalse(Files.readString(Path.of("/proc/" + pid + "/cmdline")).contains("/tmp/criu-gpu-"));
            helper.writeLine("hello");
            assertEquals("got hello", helper.readLine());
        }
    }

    @Test
    void aHelperWhoseJvmCannotStartIsReportedAtOnceWithWhatItSaid() throws Exception {
        try (HelperProcess helper = HelperProcess.start(EchoHelper.class.getName(), List.of("-XX:+NoSuchOptionHere"), List.of(SELF))) {
            long t0 = System.nanoTime();
            assertNull(helper.readLine(), "the end of its stream");
            assertTrue((System.nanoTime() - t0) / 1_000_000_000 < 30, "noticed only at a time-out");
            assertTrue(helper.said().startsWith("; it said: ") && helper.said().contains("NoSuchOptionHere"), helper.said());
        }
    }

    /**
     * Where nobody reaps (a container whose init waits for nothing) a helper that died before it said anything stays
     * a zombie: its end of the socket closed all the same, within 2 s of its death. The launcher is a JVM of its own
     * made a child subreaper that never reaps, so the dead helper becomes its zombie child.
     */
    @Test
    void aHelperThatDiesBeforeItSaysAnythingIsReportedAtOnceEvenWhenNobodyReapsIt() throws Exception {
        Process launcher = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                UnreapingLauncher.class.getName()).redirectErrorStream(true).start();
        try {
            List<String> out = new String(launcher.getInputStream().readAllBytes()).lines().toList();
            assertTrue(launcher.waitFor(60, TimeUnit.SECONDS), "the launcher did not end");
            assertEquals(2, out.size(), out.toString());
            long zombie = Long.parseLong(out.get(0).substring("zombie ".length()));
            assertTrue(zombie > 0, "the helper never became a zombie: " + out);
            String[] reported = out.get(1).split(" ", 3);
            assertEquals("reported", reported[0], out.toString());
            assertTrue(reported[2].startsWith("the broken helper ended; it said: ")
                    && reported[2].contains("NoSuchOptionHere"), reported[2]);
            assertTrue(Long.parseLong(reported[1]) < 2000, "reported " + reported[1] + " ms after the helper died");
        } finally {
            launcher.destroyForcibly().waitFor();
        }
    }

    /** A peer's line is read up to a bound: longer is an error, not memory spent without end. */
    @Test
    void aLineLongerThanTheBoundIsAnError() throws Exception {
        try (HelperProcess helper = HelperProcess.start(EchoHelper.class.getName(), List.of(), List.of(SELF))) {
            helper.readLine(); // its pid
            helper.writeLine("long 1000");
            assertEquals(1000, helper.readLine().length());
            helper.writeLine("long " + (HelperProcess.MAX_LINE + 10));
            IOException e = assertThrows(IOException.class, helper::readLine);
            assertEquals("the other end sent a line longer than 1024 KiB", e.getMessage());
        }
    }

    /**
     * criu's environment may hold options for any JVM it starts, code to preload, or what changes how the loader and
     * glibc behave (a library path, tunables, charset converters): the helper gets named variables only, PATH's
     * absolute folders and a fixed locale.
     */
    @Test
    void theHelperGetsOnlyPathsAbsoluteFoldersAndALocale() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), EnvLauncher.class.getName());
        pb.environment().put("JAVA_TOOL_OPTIONS", "-Dfoo=tool");
        pb.environment().put("_JAVA_OPTIONS", "-Dfoo=underscore");
        pb.environment().put("JDK_JAVA_OPTIONS", "-Dfoo=jdk");
        pb.environment().put("CLASSPATH", "/nonexistent");
        // code criu's environment would load into a helper that runs as root (ld.so warns of these and goes on)
        pb.environment().put("LD_PRELOAD", "/nonexistent-preload.so");
        pb.environment().put("LD_AUDIT", "/nonexistent-audit.so");
        pb.environment().put("LD_LIBRARY_PATH", "/nonexistent-libs");
        pb.environment().put("GLIBC_TUNABLES", "glibc.malloc.arena_max=1");
        pb.environment().put("GCONV_PATH", "/nonexistent-gconv");
        pb.environment().put("CUDA_VISIBLE_DEVICES", "7");
        pb.environment().put("LC_ALL", "de_DE.UTF-8");
        pb.environment().put("PATH", "bin:/usr/bin::.:/bin");
        Process launcher = pb.start();
        try {
            List<String> out = new String(launcher.getInputStream().readAllBytes()).lines()
                    .filter(l -> !l.contains("ld.so")).toList();
            assertTrue(launcher.waitFor(60, TimeUnit.SECONDS), "the launcher did not end");
            assertEquals(List.of("env {LC_ALL=C.UTF-8, PATH=/usr/bin:/bin} foo=null"), out);
            assertEquals(java.util.Map.of("LC_ALL", "C.UTF-8", "PATH", "/usr/bin:/bin"), ChildEnvironment.of(pb.environment()),
                    "the Java side's list is the launcher's");
        } finally {
            launcher.destroyForcibly().waitFor();
        }
    }

    @Test
    void withoutAnAbsoluteFolderInPathTheHelperGetsTheSystemsFolders() {
        assertEquals(ChildEnvironment.DEFAULT_PATH, ChildEnvironment.of(java.util.Map.of("PATH", "bin:.")).get("PATH"));
        assertEquals(ChildEnvironment.DEFAULT_PATH, ChildEnvironment.of(java.util.Map.of()).get("PATH"));
    }

    /** The helper takes its end only from the criu it was told of (SO_PEERCRED), and says why it refused another. */
    @Test
    void aHelperRefusesAPeerThatIsNotTheCriuItServes() throws Exception {
        try (HelperProcess helper = HelperProcess.start(EchoHelper.class.getName(), List.of("--enable-native-access=ALL-UNNAMED"), List.of("1"))) {
            assertNull(helper.readLine());
            assertTrue(helper.said().contains("refusing the connection on fd 3: its peer is pid " + SELF + ", not criu's pid 1"),
                    helper.said());
        }
    }

    @Test
    void thePeerMustBeRootOrTheHelpersOwnUserAndTheCriuItServes() {
        assertEquals(Optional.empty(), HelperProcess.refusal(new Sockets.Peer(42, 0, 0), 42, 0));
        assertEquals(Optional.empty(), HelperProcess.refusal(new Sockets.Peer(42, 1000, 1000), 42, 1000));
        assertEquals(Optional.of("refusing the connection on fd 3: its peer runs as uid 1000, not root or uid 0"),
                HelperProcess.refusal(new Sockets.Peer(42, 1000, 1000), 42, 0));
        assertEquals(Optional.of("refusing the connection on fd 3: its peer is pid 43, not criu's pid 42"),
                HelperProcess.refusal(new Sockets.Peer(43, 0, 0), 42, 0));
    }

    @Test
    void thePeerOfAPairIsThisProcess() throws Exception {
        HelperProcess[] p = HelperProcess.pair();
        try {
            Sockets.Peer peer = p[1].peer();
            assertEquals(ProcessHandle.current().pid(), peer.pid());
            assertEquals(Sockets.effectiveUid(), peer.uid());
        } finally {
            p[0].close();
            p[1].close();
        }
    }

    @Test
    void theEndOfTheOtherSideIsTheEndOfTheStream() throws Exception {
        HelperProcess[] p = HelperProcess.pair();
        p[1].writeLine("last words");
        p[1].close();
        assertEquals("last words", p[0].readLine());
        assertNull(p[0].readLine());
        p[0].close();
    }

    @Test
    void closingWakesAThreadBlockedReading() throws Exception {
        HelperProcess[] p = HelperProcess.pair();
        CompletableFuture<String> read = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try {
                read.complete(p[0].readLine());
            } catch (IOException e) {
                read.complete("failed: " + e.getMessage());
            }
        }, "helper-reader");
        reader.start();
        awaitBlockedInRecvmsg("helper-reader");
        p[0].close();
        assertNull(read.get(10, TimeUnit.SECONDS));
        p[1].close();
    }

    /** Polls (bounded: 10 s) until the thread of this native name sits in recvmsg(2) (/proc/self/task/TID/syscall). */
    private static void awaitBlockedInRecvmsg(String threadName) throws Exception {
        String recvmsg = System.getProperty("os.arch").equals("aarch64") ? "212 " : "47 ";
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (System.nanoTime() < deadline) {
            try (var tasks = Files.list(Path.of("/proc/self/task"))) {
                for (Path t : tasks.toList()) {
                    try {
                        if (Files.readString(t.resolve("comm")).strip().equals(threadName)
                                && Files.readString(t.resolve("syscall")).startsWith(recvmsg)) return;
                    } catch (IOException e) {
                        // that thread ended meanwhile
                    }
                }
            }
            Thread.sleep(2);
        }
        throw new AssertionError("thread " + threadName + " never blocked in recvmsg within 10 s");
    }

    @Test
    void anFdGoesAlongWithItsLine(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("f"), "");
        int fd = Syscalls.libc().open(file.toString(), Syscalls.O_WRONLY | Syscalls.O_CLOEXEC);
        HelperProcess[] p = HelperProcess.pair();
        try {
            p[0].writeLine("first");
            p[0].writeLine("with", fd);
            Syscalls.libc().close(fd);
            assertEquals("first", p[1].readLine());
            assertEquals("with", p[1].readLine());
            int got = p[1].takeFd();
            assertTrue(got >= 0);
            assertEquals(-1, p[1].takeFd());
            Syscalls.FileStat st = Syscalls.libc().fileStat(got);
            assertEquals(Files.getAttribute(file, "unix:ino"), st.ino());
            Syscalls.libc().close(got);
        } finally {
            p[0].close();
            p[1].close();
        }
    }

    /** What the shim does before criu's JVM: a socketpair whose one end it hands to Bootstrap by number. */
    @Test
    void aHelperStartedBeforeTheJvmIsAdoptedByItsFd() throws Exception {
        int[] sv = Sockets.socketPair();
        HelperProcess.preStarted(sv[0] + " -1 " + SELF + " " + Files.readString(Path.of("/proc/self/stat")).strip());
        try (HelperProcess helper = HelperProcess.ofFd(sv[1]); HelperProcess criu = HelperProcess.adoptPreStarted().orElseThrow()) {
            assertTrue(HelperProcess.adoptPreStarted().isEmpty(), "adopted twice");
            assertEquals(ProcessHandle.current().pid(), criu.pid());
            assertTrue(criu.alive());
            criu.writeLine("args --x 1");
            assertEquals("args --x 1", helper.readLine());
        }
    }

    @Test
    void aHelperStartedBeforeTheJvmThatNobodyAdoptsReadsTheEnd() throws Exception {
        int[] sv = Sockets.socketPair();
        HelperProcess.preStarted(sv[0] + " -1 1 ");
        HelperProcess.discardUnadopted();
        assertTrue(HelperProcess.adoptPreStarted().isEmpty());
        try (HelperProcess helper = HelperProcess.ofFd(sv[1])) {
            assertNull(helper.readLine());
        }
    }
}

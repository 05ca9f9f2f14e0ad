package dev.criugpu.api;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A helper started the way the CUDA agent is: not our child, a session of its own, deaf to Ctrl-C, one socket. */
class HelperProcessTest {
    static String[] stat(long pid) throws IOException {
        String s = Files.readString(Path.of("/proc/" + pid + "/stat"));
        return s.substring(s.lastIndexOf(')') + 2).split(" ");
    }

    static long sigIgn(long pid) throws IOException {
        return Long.parseLong(Files.readAllLines(Path.of("/proc/" + pid + "/status")).stream()
                .filter(l -> l.startsWith("SigIgn:")).findFirst().orElseThrow().substring(7).trim(), 16);
    }

    @Test
    void theHelperIsNotOurChildHasItsOwnSessionAndIgnoresCtrlC() throws Exception {
        HelperProcess.Pending pending = HelperProcess.start(EchoHelper.class.getName(), List.of("-Xrs"), List.of());
        Path socket = pending.socket();
        HelperProcess helper = pending.connect(30_000, "the echo helper");
        try {
            assertFalse(Files.exists(socket) || Files.exists(socket.getParent()), "the socket and its directory are left");
            String first = helper.readLine();
            assertTrue(first.startsWith("pid "), first);
            long pid = Long.parseLong(first.substring(4));
            String[] f = stat(pid);
            assertNotEquals(ProcessHandle.current().pid(), Long.parseLong(f[1]), "it is our child");
            assertNotEquals(Long.parseLong(stat(ProcessHandle.current().pid())[3]), Long.parseLong(f[3]), "it shares our session");
            assertTrue((sigIgn(pid) & (1L << 1)) != 0, "SIGINT is not ignored: Ctrl-C meant for criu would end it");
            helper.writeLine("hello");
            assertEquals("got hello", helper.readLine());
        } finally {
            helper.close();
        }
    }

    @Test
    void aHelperWhoseJvmCannotStartIsReportedAtOnceWithWhatItSaid() throws Exception {
        HelperProcess.Pending pending = HelperProcess.start(EchoHelper.class.getName(), List.of("-XX:+NoSuchOptionHere"), List.of());
        long t0 = System.nanoTime();
        IOException e = assertThrows(IOException.class, () -> pending.connect(60_000, "the broken helper"));
        assertTrue(e.getMessage().startsWith("the broken helper ended before it connected; it said: ")
                && e.getMessage().contains("NoSuchOptionHere"), e.getMessage());
        assertTrue((System.nanoTime() - t0) / 1_000_000_000 < 30, "noticed only at the time-out");
        assertFalse(Files.exists(pending.socket().getParent()));
    }

    /**
     * Where nobody reaps (a container whose init waits for nothing) a helper that died before it connected stays a
     * zombie: it is reported as ended within 2 s of its death, not at the time-out. The launcher is a JVM of its own
     * made a child subreaper that never reaps, so the dead helper becomes its zombie child.
     */
    @Test
    void aHelperThatDiesBeforeItConnectsIsReportedAtOnceEvenWhenNobodyReapsIt() throws Exception {
        Process launcher = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                UnreapingLauncher.class.getName()).redirectErrorStream(true).start();
        try {
            List<String> out = new String(launcher.getInputStream().readAllBytes()).lines().toList();
            assertTrue(launcher.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), "the launcher did not end");
            assertEquals(2, out.size(), out.toString());
            long zombie = Long.parseLong(out.get(0).substring("zombie ".length()));
            assertTrue(zombie > 0, "the helper never became a zombie: " + out);
            String[] reported = out.get(1).split(" ", 3);
            assertEquals("reported", reported[0], out.toString());
            assertTrue(reported[2].startsWith("the broken helper ended before it connected; it said: ")
                    && reported[2].contains("NoSuchOptionHere"), reported[2]);
            assertTrue(Long.parseLong(reported[1]) < 2000, "reported " + reported[1] + " ms after the helper died");
        } finally {
            launcher.destroyForcibly().waitFor();
        }
    }

    /** criu's environment may hold options for any JVM it starts: the helper's JVM takes none of them. */
    @Test
    void theHelperInheritsNoJvmOptionsOrClassPathFromTheEnvironment() throws Exception {
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), EnvLauncher.class.getName());
        pb.environment().put("JAVA_TOOL_OPTIONS", "-Dfoo=tool");
        pb.environment().put("_JAVA_OPTIONS", "-Dfoo=underscore");
        pb.environment().put("JDK_JAVA_OPTIONS", "-Dfoo=jdk");
        pb.environment().put("CLASSPATH", "/nonexistent");
        Process launcher = pb.start();
        try {
            List<String> out = new String(launcher.getInputStream().readAllBytes()).lines().toList();
            assertTrue(launcher.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), "the launcher did not end");
            assertEquals(List.of("env [] foo=null"), out);
        } finally {
            launcher.destroyForcibly().waitFor();
        }
    }

    @Test
    void aHelperThatNeverConnectsIsReportedByName() throws Exception {
        HelperProcess.Pending pending = HelperProcess.start(EchoHelper.class.getName(), List.of(), List.of("--wait-forever"));
        IOException e = assertThrows(IOException.class, () -> pending.connect(1500, "the silent helper"));
        assertEquals("the silent helper did not connect within 1500 ms", e.getMessage());
        assertFalse(Files.exists(pending.socket().getParent()));
    }

    @Test
    void theEndOfTheOtherSideIsTheEndOfTheStream() throws Exception {
        HelperProcess.Pending pending = HelperProcess.listen();
        HelperProcess far = HelperProcess.connectTo(pending.socket());
        HelperProcess near = pending.connect(5000, "the far end");
        far.writeLine("last words");
        far.close();
        assertEquals("last words", near.readLine());
        assertNull(near.readLine());
    }

    /** What the shim does before criu's JVM: a private directory, the helper started with a socket path in it. */
    private static Path shimDirectory() throws IOException {
        return Files.createTempDirectory("criu-gpu-");
    }

    @Test
    void aHelperStartedBeforeTheJvmWaitsForTheSocketAndIsAdoptedThere() throws Exception {
        Path dir = shimDirectory();
        Path socket = dir.resolve("helper.sock");
        java.util.concurrent.CompletableFuture<HelperProcess> early = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return HelperProcess.connectTo(socket, () -> true, 30_000);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        HelperProcess.preStarted(dir);
        HelperProcess.Pending adopted = HelperProcess.adoptPreStarted().orElseThrow();
        assertEquals(socket, adopted.socket());
        assertTrue(HelperProcess.adoptPreStarted().isEmpty(), "adopted twice");
        try (HelperProcess criu = adopted.connect(30_000, "the early helper"); HelperProcess helper = early.get()) {
            assertFalse(Files.exists(dir), "the directory is left once the helper connected");
            criu.writeLine("args --x 1");
            assertEquals("args --x 1", helper.readLine());
        }
    }

    @Test
    void aHelperStartedBeforeTheJvmThatNobodyAdoptsFindsItsDirectoryGone() throws Exception {
        Path dir = shimDirectory();
        Files.writeString(dir.resolve("helper.pid"), "1\n");
        HelperProcess.preStarted(dir);
        HelperProcess.discardUnadopted();
        assertFalse(Files.exists(dir));
        assertTrue(HelperProcess.adoptPreStarted().isEmpty());
        IOException e = assertThrows(IOException.class, () -> HelperProcess.connectTo(dir.resolve("helper.sock"), () -> true, 30_000));
        assertTrue(e.getMessage().contains("helper.sock"), e.getMessage());
    }

    @Test
    void aHelperStartedBeforeTheJvmGivesUpOnACriuThatIsGoneAndCleansUp() throws Exception {
        Path dir = shimDirectory();
        Files.writeString(dir.resolve("helper.out"), "");
        IOException e = assertThrows(IOException.class, () -> HelperProcess.connectTo(dir.resolve("helper.sock"), () -> false, 30_000));
        assertTrue(e.getMessage().startsWith("criu ended before it listened on "), e.getMessage());
        assertFalse(Files.exists(dir), "what criu's death left");
    }
}

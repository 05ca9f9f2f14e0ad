package dev.criugpu.cuda.agent;

import dev.criugpu.api.sys.Sockets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Issue 31 B with the real agent: another user (uid 65534, through setpriv) takes the name of a helper directory
 * under /tmp once criu's side removed it, listens there, and sends the first lines that once made the agent run
 * {@code --cuda-checkpoint}'s program as root and create the log file they named. The agent, started as the shim
 * once started it (a socket path in that directory) and as it is started now (a socketpair through
 * {@link AgentClient}), runs nothing and creates nothing of theirs. Today's agent refuses a socket path at its arguments
 * (exit 2, its usage line): the first half checks exactly that. With the agent of commit c561d08 started the old way
 * ({@code CRIU_GPU_TEST_AGENT_TREE=DIR}, DIR a build of that commit) the same test fails: the agent connects to the
 * squatter and runs its program as root.
 */
class AgentSquatterTest {
    private static final String NOBODY = "65534";
    private static final Path SETPRIV = Path.of("/usr/bin/setpriv");

    @TempDir
    Path ours;

    @Test
    void anotherUserWhoTakesTheNameOfAGoneHelperDirectoryMakesTheAgentRunNothingAndCreateNothing() throws Exception {
        assumeTrue(Sockets.effectiveUid() == 0 && Files.isExecutable(SETPRIV), "needs root and setpriv");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path theirs = Files.createTempDirectory("squatter-");
        Path ran = theirs.resolve("ran");
        Path made = theirs.resolve("made-by-the-agent.log");
        Path program = Files.writeString(theirs.resolve("run-me"), "#!/bin/sh\nid -u >> " + ran + "\n");
        Files.setPosixFilePermissions(program, PosixFilePermissions.fromString("rwxr-xr-x"));
        try (InputStream src = AgentSquatterTest.class.getResourceAsStream("/squatter/Squatter.java")) {
            Files.copy(src, theirs.resolve("Squatter.java"));
        }
        Files.setPosixFilePermissions(theirs, PosixFilePermissions.fromString("rwxr-xr-x"));
        try (Stream<Path> files = Files.list(theirs)) {
            for (Path f : Stream.concat(Stream.of(theirs), files.toList().stream()).toList()) {
                Files.setAttribute(f, "unix:uid", Integer.parseInt(NOBODY));
                Files.setAttribute(f, "unix:gid", Integer.parseInt(NOBODY));
            }
        }
        Process squatter = new ProcessBuilder(SETPRIV.toString(), "--reuid=" + NOBODY, "--regid=" + NOBODY, "--clear-groups",
                "--", java, "-XX:-UsePerfData", theirs.resolve("Squatter.java").toString(), program.toString(), made.toString())
                .redirectErrorStream(true).start();
        List<String> said = Collections.synchronizedList(new ArrayList<>());
        Thread reader = Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(squatter.getInputStream(), StandardCharsets.UTF_8))) {
                for (String l; (l = r.readLine()) != null; ) said.add(l);
            } catch (java.io.IOException e) {
                said.add("read: " + e);
            }
        });
        Path dir = null;
        try {
            awaitLine(said, "watching", squatter);
            // the trigger of B: a helper directory of the old kind, removed (a refused JVM, CRIU_CUDA_GUARD=0, ...)
            // while the agent started with its socket path is still coming up
            dir = Files.createTempDirectory("criu-gpu-");
            OutputStream toSquatter = squatter.getOutputStream();
            toSquatter.write((dir.getFileName() + "\n").getBytes(StandardCharsets.UTF_8));
            toSquatter.flush();
            awaitLine(said, "target " + dir.getFileName(), squatter);   // the squatter has the name before it goes
            Process old = new ProcessBuilder(java, "-XX:-UsePerfData", "--enable-native-access=ALL-UNNAMED", "-cp",
                    agentClassPath(),
                    CudaAgent.class.getName(), "--socket", dir.resolve("helper.sock").toString(),
                    "--criu-pid", Long.toString(ProcessHandle.current().pid()))
                    .redirectErrorStream(true).redirectOutput(ours.resolve("old-start.out").toFile()).start();
            Files.delete(dir);
            awaitLine(said, "squatted " + dir, squatter);
            if (System.getenv("CRIU_GPU_TEST_AGENT_TREE") == null) {
                // today's agent takes no socket path at all: it must refuse one at its arguments, before any connect
                assertTrue(old.waitFor(60, TimeUnit.SECONDS), "the agent started with a socket path did not end");
                assertEquals(2, old.exitValue(), "the agent started with a socket path: " + Files.readString(ours.resolve("old-start.out")));
                assertTrue(Files.readString(ours.resolve("old-start.out")).contains("usage: --criu-pid P"),
                        Files.readString(ours.resolve("old-start.out")));
            } else {
                assertTrue(old.waitFor(60, TimeUnit.SECONDS) || ranOrMade(ran, made), "the agent started with a socket path neither ended nor ran anything");
            }
            old.destroyForcibly().waitFor();

            // the agent as it is started now: its end of a socketpair, a log criu's side created; given up after its answer
            dev.criugpu.api.LauncherForTests.install();
            AgentClient client = AgentClient.launch("cli", 0, List.of(), false).logTo(ours.resolve("cuda-plugin-agent.log"));
            assertTrue(client.unavailable().isPresent(), "a cuda-checkpoint was found in PATH: not this test's setting");
            try {
                client.done();
            } catch (java.io.IOException e) {
                // it said it is unusable, and criu's side closed the connection then: it has ended
            }
            Thread.sleep(1000); // what a connection to the squatter would have run by now

            assertFalse(Files.exists(ran), "the squatter's program ran, as uid " + (Files.exists(ran) ? Files.readString(ran).strip() : "")
                    + "; squatter: " + said + "; agent: " + Files.readString(ours.resolve("old-start.out")));
            assertFalse(Files.exists(made), "the agent created the file the squatter named");
            assertEquals(List.of(), said.stream().filter(l -> l.startsWith("connected")).toList(), "an agent connected to the squatter");
            try (Stream<Path> left = Files.list(theirs)) {
                assertEquals(List.of("Squatter.java", "run-me"), left.map(p -> p.getFileName().toString()).sorted().toList());
            }
            assertTrue(Files.exists(ours.resolve("cuda-plugin-agent.log")), "criu's side made the agent's log");
        } finally {
            squatter.destroyForcibly().waitFor();
            reader.join(5000);
            for (Path p : dir == null ? List.of(theirs) : List.of(theirs, dir)) deleteTree(p);
        }
    }

    /** This class path, or with {@code CRIU_GPU_TEST_AGENT_TREE} set, its modules' classes from that build instead. */
    private static String agentClassPath() {
        String cp = System.getProperty("java.class.path");
        String tree = System.getenv("CRIU_GPU_TEST_AGENT_TREE");
        if (tree == null) return cp;
        return Stream.of(cp.split(":")).map(e -> e.endsWith("/target/classes")
                ? Path.of(tree, Path.of(e).getParent().getParent().getFileName().toString(), "target", "classes").toString() : e)
                .collect(java.util.stream.Collectors.joining(":"));
    }

    private static boolean ranOrMade(Path ran, Path made) {
        return Files.exists(ran) || Files.exists(made);
    }

    private static void awaitLine(List<String> said, String line, Process squatter) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!said.contains(line)) {
            if (System.nanoTime() > deadline || !squatter.isAlive() && !said.contains(line)) {
                throw new AssertionError("the squatter did not say '" + line + "': " + said);
            }
            Thread.sleep(5);
        }
    }

    private static void deleteTree(Path p) throws java.io.IOException {
        if (!Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) return;
        try (Stream<Path> all = Files.walk(p)) {
            for (Path f : all.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(f);
        }
    }
}

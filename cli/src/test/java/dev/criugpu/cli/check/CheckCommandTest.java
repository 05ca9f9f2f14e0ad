package dev.criugpu.cli.check;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code criu-gpu check} on real processes this test starts: a small C program built here with gcc holds a deleted
 * 2 MiB /dev/shm file, a loopback TCP connection with a child it forked, or an io_uring.
 */
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CheckCommandTest {
    @TempDir
    static Path bin;
    static Path target;
    private final List<Process> started = new ArrayList<>();
    private final List<Path> shmFiles = new ArrayList<>();

    @BeforeAll
    static void build() throws Exception {
        Path src = bin.resolve("check-target.c");
        try (InputStream in = Objects.requireNonNull(CheckCommandTest.class.getResourceAsStream("check-target.c"))) {
            Files.copy(in, src);
        }
        target = bin.resolve("check-target");
        Process gcc = new ProcessBuilder("gcc", "-O1", "-Wall", "-o", target.toString(), src.toString())
                .redirectErrorStream(true).start();
        String log = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(gcc.waitFor(60, TimeUnit.SECONDS), "gcc did not finish");
        assertEquals(0, gcc.exitValue(), "gcc failed: " + log);
    }

    @AfterEach
    void stop() throws Exception {
        for (Process p : started) {
            p.getOutputStream().close();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
        }
        for (Path f : shmFiles) Files.deleteIfExists(f);
    }

    /** Starts check-target, returns its pid once it printed its first line ("ready" or why not: see {@code line}). */
    private record Started(long pid, String line) {
    }

    private Started start(String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(target.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        started.add(p);
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line = r.readLine(); // bounded by the class's timeout
        return new Started(p.pid(), String.valueOf(line));
    }

    private record Result(int status, List<String> out, String err) {
        List<String> starting(String prefix) {
            return out.stream().filter(l -> l.startsWith(prefix)).toList();
        }

        String summary() {
            return out.getLast();
        }
    }

    private static Result check(String path, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        int status = CheckCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), ProcFs.live(), path);
        String text = out.toString(StandardCharsets.UTF_8);
        return new Result(status, text.isEmpty() ? List.of() : List.of(text.split("\n")),
                err.toString(StandardCharsets.UTF_8));
    }

    private static Result check(long pid) {
        return check(System.getenv("PATH"), Long.toString(pid));
    }

    @Test
    void aQuietProcessHasNothingThatWouldStopTheDump() throws Exception {
        Started s = start("idle");
        assertEquals("ready", s.line());
        Result r = check(s.pid());
        assertEquals(0, r.status(), r.out().toString());
        assertEquals("note: 1 process in the tree of pid " + s.pid() + ": " + s.pid() + " check-target", r.out().getFirst());
        assertEquals(List.of(), r.starting("problem:"));
        assertEquals(List.of(), r.starting("needs:"));
        assertEquals("summary: nothing seen that would stop criu dump -t " + s.pid() + "; no criu option needed",
                r.summary());
    }

    @Test
    void aDeletedShmFileOverTheGhostLimitNeedsAGhostLimitThatCoversIt() throws Exception {
        String tag = "criu-gpu-check-test-" + UUID.randomUUID();
        Path deleted = Path.of("/dev/shm", tag + "-deleted"), kept = Path.of("/dev/shm", tag + "-kept");
        shmFiles.add(deleted);
        shmFiles.add(kept);
        Started s = start("ghost", deleted.toString(), "2", kept.toString(), "1");
        assertEquals("ready", s.line());
        Result r = check(s.pid());
        assertEquals(1, r.status(), r.out().toString());
        List<String> ghost = r.starting("needs: --ghost-limit");
        assertEquals(1, ghost.size(), r.out().toString());
        assertTrue(ghost.getFirst().startsWith("needs: --ghost-limit 2M: deleted file " + deleted + " (open by pid "
                + s.pid() + " fd 3, mapped by pid " + s.pid() + ") holds 2.0 MiB, over criu's default ghost limit of "
                + "1 MiB"), ghost.getFirst());
        List<String> shm = r.starting("note: 1 file in /dev/shm open or mapped, not deleted");
        assertEquals(List.of("note: 1 file in /dev/shm open or mapped, not deleted (" + kept + " 1.0 MiB; 1.0 MiB in "
                + "all): criu records them by path and size, not their contents: they must still be there, the same "
                + "size, where the job is restored"), shm);
        assertEquals(List.of(), r.starting("problem:"));
        assertEquals("summary: 0 problems (no criu option avoids them), 1 need (criu options); a plain criu dump would "
                + "fail; options: criu dump -t " + s.pid() + " --ghost-limit 2M", r.summary());
    }

    @Test
    void anEstablishedLoopbackConnectionNeedsTcpEstablishedAndWithoutIptablesNoNetworkLock() throws Exception {
        Started s = start("tcp");
        assertEquals("ready", s.line());
        long child = ProcessHandle.of(s.pid()).orElseThrow().children().findFirst().orElseThrow().pid();
        Result r = check(Path.of(bin.toString(), "no-such-dir") + ":" + bin, Long.toString(s.pid()));
        assertEquals(1, r.status(), r.out().toString());
        assertTrue(r.out().getFirst().endsWith(s.pid() + " check-target, " + child + " check-target (child of "
                + s.pid() + ")"), r.out().getFirst());
        assertEquals(List.of("needs: --tcp-established: 2 connected TCP sockets in 2 processes (all peers in the "
                + "tree)"), r.starting("needs: --tcp-established:"), r.out().toString());
        assertEquals(0, r.out().stream().filter(l -> l.contains(": TCP ")).count(), r.out().toString());
        assertEquals(List.of("note: lines that count several sockets or files: criu-gpu check --verbose " + s.pid()
                + " lists them one a line"), r.starting("note: lines that count"));

        Result verbose = check(Path.of(bin.toString(), "no-such-dir") + ":" + bin, "--verbose", Long.toString(s.pid()));
        int at = verbose.out().indexOf("needs: --tcp-established: 2 connected TCP sockets in 2 processes (all peers in "
                + "the tree)");
        assertTrue(at > 0, verbose.out().toString());
        List<String> tcp = verbose.out().subList(at + 1, at + 3);
        Pattern conn = Pattern.compile("    pid (\\d+) \\(check-target: \\S+ tcp\\) fd (\\d+): "
                + "TCP 127\\.0\\.0\\.1:(\\d+) -> 127\\.0\\.0\\.1:(\\d+) established \\(peer in the tree: pid (\\d+) "
                + "fd (\\d+)\\)");
        var server = conn.matcher(tcp.get(0));
        var client = conn.matcher(tcp.get(1));
        assertTrue(server.matches(), tcp.get(0));
        assertTrue(client.matches(), tcp.get(1));
        assertEquals(Long.toString(s.pid()), server.group(1));
        assertEquals(Long.toString(child), client.group(1));
        assertEquals(server.group(3), client.group(4));
        assertEquals(server.group(4), client.group(3));
        assertEquals(client.group(1), server.group(5));
        assertEquals(client.group(2), server.group(6));
        assertEquals(server.group(1), client.group(5));
        // the listening socket is no finding of its own
        assertEquals(2, verbose.out().stream().filter(l -> l.contains(": TCP ")).count(), verbose.out().toString());
        assertEquals(List.of(), verbose.starting("note: lines that count"));
        assertEquals(r.summary(), verbose.summary());
        assertTrue(r.starting("needs: --network-lock skip: iptables-restore is not on this host's PATH").size() == 1,
                r.out().toString());
        assertEquals("summary: 0 problems (no criu option avoids them), 2 needs (criu options); a plain criu dump would "
                + "fail; options: criu dump -t " + s.pid() + " --tcp-established --network-lock skip, criu restore "
                + "--tcp-established --network-lock skip", r.summary());

        Path fakeIptables = Files.createDirectories(bin.resolve("sbin")).resolve("iptables-restore");
        Files.writeString(fakeIptables, "#!/bin/sh\n");
        assertTrue(fakeIptables.toFile().setExecutable(true));
        Result withIptables = check(fakeIptables.getParent().toString(), Long.toString(s.pid()));
        assertEquals(List.of(), withIptables.starting("needs: --network-lock"));
        assertTrue(withIptables.summary().endsWith("--tcp-established, criu restore --tcp-established"),
                withIptables.summary());
    }

    @Test
    void connectionsTheTreeClosedOnItsListeningPortAreCountedInTimeWait() throws Exception {
        Started s = start("timewait", "3");
        assertTrue(s.line().startsWith("port "), s.line());
        String port = s.line().substring(5);
        Result r = check(s.pid());
        assertEquals(0, r.status(), r.out().toString());
        assertEquals(List.of("note: 3 connection(s) in TIME_WAIT on port " + port + ", which the tree listens on: a "
                + "restore on this host before they expire (≤ 60 s) fails with \"Address already in use\"" + TcpCheck.UNLESS_CUDA),
                r.starting("note: 3 connection(s)"), r.out().toString());
        assertEquals("summary: nothing seen that would stop criu dump -t " + s.pid() + "; no criu option needed",
                r.summary());
    }

    @Test
    void elfNeededReadsTheLibrariesOfARealExecutable() {
        assertTrue(ElfNeeded.of(target).orElseThrow().contains("libc.so.6"), ElfNeeded.of(target).toString());
        assertEquals(java.util.Optional.empty(), ElfNeeded.of(bin.resolve("check-target.c")));
    }

    @Test
    void anIoUringIsAProblemNamingPidFdAndCommand() throws Exception {
        Started s = start("uring");
        if (!s.line().equals("ready")) {
            System.err.println("!!!!! CheckCommandTest: io_uring case SKIPPED: this kernel refused io_uring_setup ("
                    + s.line() + ") !!!!!");
            Assumptions.abort("kernel refused io_uring_setup: " + s.line());
        }
        Result r = check(s.pid());
        assertEquals(1, r.status(), r.out().toString());
        List<String> problems = r.starting("problem:");
        assertEquals(1, problems.size(), r.out().toString());
        assertTrue(Pattern.matches("problem: pid " + s.pid() + " \\(check-target: \\S+ uring\\) fd \\d+: io_uring "
                + "\\(anon_inode:\\[io_uring\\]\\): criu 4\\.2\\.1 cannot dump it \\(\"Unknown shit 600 "
                + "\\(anon_inode:\\[io_uring\\]\\)\"\\); neither torch's TCPStore server on libuv \\(thread "
                + "pt_tcpstore_uv, rid of it by USE_LIBUV=0\\) nor torchrun's elastic agent \\(thread pt_elastic\\) "
                + "runs in this process: the program or one of its libraries made it", problems.getFirst()),
                problems.getFirst());
        assertTrue(r.summary().startsWith("summary: 1 problem (no criu option avoids it), 0 needs"), r.summary());
    }

    @Test
    void aThreadIdChecksItsProcess() throws Exception {
        Started s = start("idle");
        long me = ProcessHandle.current().pid();
        String thread;
        try (var tasks = Files.list(Path.of("/proc/" + me + "/task"))) {
            thread = tasks.map(p -> p.getFileName().toString()).filter(t -> !t.equals(Long.toString(me))).findFirst()
                    .orElseThrow();
        }
        Result r = check(System.getenv("PATH"), thread);
        assertEquals("note: " + thread + " is a thread of process " + me + ": checking process " + me,
                r.out().getFirst());
        assertTrue(r.out().get(1).contains(s.pid() + " check-target (child of " + me + ")"), r.out().get(1));
    }

    @Test
    void usageAndMissingProcessesExitWithTwoAndOneLine() throws Exception {
        Result none = check(System.getenv("PATH"));
        assertEquals(2, none.status());
        assertEquals("usage: criu-gpu check [--verbose] PID\n", none.err());
        assertEquals(2, check(System.getenv("PATH"), "--verbose").status());
        assertEquals(2, check(System.getenv("PATH"), "--verbose", "1", "2").status());
        Result word = check(System.getenv("PATH"), "abc");
        assertEquals(2, word.status());
        assertTrue(word.err().startsWith("criu-gpu check: 'abc' is not a process id\n"), word.err());
        // pid_max is 2^22 at most (PID_MAX_LIMIT on 64-bit) and pids stay below it: 2^22 never names a process
        String pidMax = Integer.toString(1 << 22);
        Result gone = check(System.getenv("PATH"), pidMax);
        assertEquals(2, gone.status(), gone.out() + gone.err());
        assertEquals("criu-gpu check: no process " + pidMax + " (nothing in /proc/" + pidMax + ")\n", gone.err());
        assertEquals(List.of(), gone.out());
    }
}

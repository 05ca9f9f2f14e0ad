package dev.criugpu.api.sys;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Real processes whose fd 2 is a pipe, a file, a file open only for reading, a FIFO nobody reads, a socket, a device,
 * /dev/null, or closed.
 */
class TaskStderrTest {
    @TempDir
    Path dir;
    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void stop() {
        started.forEach(Process::destroyForcibly);
    }

    /** {@code sh -c "SETUP; echo ready; exec sleep 60"}, once it said ready. */
    private Process start(String setup, ProcessBuilder.Redirect stderr) throws IOException {
        return start(setup, stderr, "sh");
    }

    private Process start(String setup, ProcessBuilder.Redirect stderr, String shell) throws IOException {
        Process p = new ProcessBuilder(shell, "-c", setup + "echo ready; exec sleep 60").redirectError(stderr).start();
        started.add(p);
        String first = new String(p.getInputStream().readNBytes(6), StandardCharsets.UTF_8);
        assertEquals("ready\n", first);
        return p;
    }

    @Test
    void aPipeGetsTheLine() throws IOException {
        Process p = start("", ProcessBuilder.Redirect.PIPE);
        assertTrue(TaskStderr.tell((int) p.pid(), "pid 7: CUDA restore failed").startsWith("said so on its stderr (pipe:["));
        String want = "pid 7: CUDA restore failed\n";
        assertEquals(want, new String(p.getErrorStream().readNBytes(want.length()), StandardCharsets.UTF_8));
    }

    @Test
    void aFileGetsTheLineAppended() throws IOException {
        Path log = Files.writeString(dir.resolve("task.log"), "its own output\n");
        Process p = start("", ProcessBuilder.Redirect.appendTo(log.toFile()));
        assertEquals("said so on its stderr (" + log + ")", TaskStderr.tell((int) p.pid(), "the reason"));
        assertEquals("its own output\nthe reason\n", Files.readString(log));
    }

    @Test
    void aFileTheTaskOnlyReadsIsLeftAlone() throws IOException {
        Path file = Files.writeString(dir.resolve("config"), "unchanged\n");
        Process p = start("exec 2<" + file + "; ", ProcessBuilder.Redirect.PIPE);
        assertEquals("its stderr (" + file + ") is not open for writing", TaskStderr.tell((int) p.pid(), "the reason"));
        assertEquals("unchanged\n", Files.readString(file));
    }

    @Test
    void devNullAClosedFdAndNoTaskAreNotWrittenTo() throws IOException {
        assertEquals("its stderr (/dev/null) is no file, pipe, socket or terminal",
                TaskStderr.tell((int) start("", ProcessBuilder.Redirect.DISCARD).pid(), "the reason"));
        assertEquals("it has no stderr to say so on",
                TaskStderr.tell((int) start("exec 2>&-; ", ProcessBuilder.Redirect.PIPE).pid(), "the reason"));
        assertEquals("it has no stderr to say so on", TaskStderr.tell(Integer.MAX_VALUE, "the reason"));
    }

    /** A FIFO whose reader has gone: the line is dropped at once, nothing waits for a reader. */
    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aFifoNobodyReadsIsNotWaitedFor() throws Exception {
        Path fifo = dir.resolve("fifo");
        Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).start();
        assertEquals(0, mkfifo.waitFor());
        // a reader for as long as the task opens it for writing (a FIFO's open waits for the other side)
        int reader = Syscalls.libc().open(fifo.toString(), Syscalls.O_RDONLY | Syscalls.O_NONBLOCK | Syscalls.O_CLOEXEC);
        Process p = start("exec 2>" + fifo + "; ", ProcessBuilder.Redirect.PIPE);
        Syscalls.libc().close(reader);
        String said = TaskStderr.tell((int) p.pid(), "the reason");
        assertTrue(said.startsWith("cannot write to its stderr (" + fifo + "): ") && said.contains("ENXIO"), said);
    }

    /** A socket (the journal's stream, a log collector's connection) gets the line as the task would send it. */
    @Test
    void aSocketGetsTheLine() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Process p = start("exec 2>/dev/tcp/127.0.0.1/" + server.getLocalPort() + "; ", ProcessBuilder.Redirect.PIPE, "bash");
            try (Socket accepted = server.accept()) {
                assertTrue(TaskStderr.tell((int) p.pid(), "the reason").startsWith("said so on its stderr (socket:["));
                String want = "the reason\n";
                assertEquals(want, new String(accepted.getInputStream().readNBytes(want.length()), StandardCharsets.UTF_8));
            }
        }
    }

    /** What the task's name or an image put in the line reaches its terminal or log escaped. */
    @Test
    void controlCharactersInTheLineAreEscaped() throws IOException {
        Process p = start("", ProcessBuilder.Redirect.PIPE);
        TaskStderr.tell((int) p.pid(), "GPU-\u001b[2J\nforged line");
        String want = "GPU-\\x1b[2J\\x0aforged line\n";
        assertEquals(want, new String(p.getErrorStream().readNBytes(want.length()), StandardCharsets.UTF_8));
    }

    /**
     * A pseudo-terminal's master side (/dev/ptmx) as fd 2: an open of it would make a new pseudo-terminal (a device
     * open has effects), so it is looked at in the task's own open file and refused without any open. The new
     * terminals /dev/pts sees are counted up to one the test makes itself afterwards (inotify keeps their order).
     */
    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aDeviceIsNotOpenedToFindOutWhatItIs() throws Exception {
        Assumptions.assumeTrue(Files.isDirectory(Path.of("/dev/pts")) && Files.isReadable(Path.of("/dev/ptmx")),
                "NOT RUN: no /dev/pts and /dev/ptmx here");
        Process p = start("exec 2<>/dev/ptmx; ", ProcessBuilder.Redirect.PIPE);
        try (WatchService watch = FileSystems.getDefault().newWatchService()) {
            Path.of("/dev/pts").register(watch, StandardWatchEventKinds.ENTRY_CREATE);
            String said = TaskStderr.tell((int) p.pid(), "the reason");
            int own = Syscalls.libc().open("/dev/ptmx", Syscalls.O_RDWR | Syscalls.O_NOCTTY | Syscalls.O_CLOEXEC);
            try {
                String ownName = Files.readAllLines(Path.of("/proc/self/fdinfo/" + own)).stream()
                        .filter(l -> l.startsWith("tty-index:")).findFirst().orElseThrow().substring(10).strip();
                int created = 0;
                boolean ownSeen = false;
                while (!ownSeen) {
                    WatchKey key = watch.take();
                    for (WatchEvent<?> e : key.pollEvents()) {
                        if (e.kind() != StandardWatchEventKinds.ENTRY_CREATE) continue;
                        created += e.count();
                        ownSeen |= e.context().toString().equals(ownName);
                    }
                    key.reset();
                }
                assertEquals(1, created, "pseudo-terminals made while the task's stderr was looked at");
                // in a container /dev/ptmx is a link to /dev/pts/ptmx, and the task's fd names where it leads
                String ptmx = Path.of("/dev/ptmx").toRealPath().toString();
                assertEquals("its stderr (" + ptmx + ") is no file, pipe, socket or terminal", said);
            } finally {
                Syscalls.libc().close(own);
            }
        }
    }

    @Test
    void filesPipesSocketsAndTerminalsCountOtherDevicesDoNot() {
        assertEquals(TaskStderr.Kind.PIPE, TaskStderr.kind(0010644, 0));
        assertEquals(TaskStderr.Kind.FILE, TaskStderr.kind(0100644, 0));
        assertEquals(TaskStderr.Kind.SOCKET, TaskStderr.kind(0140777, 0));
        assertEquals(TaskStderr.Kind.TERMINAL, TaskStderr.kind(0020620, (136 << 8) | 3), "/dev/pts/3");
        assertEquals(TaskStderr.Kind.TERMINAL, TaskStderr.kind(0020620, (4 << 8) | 1), "/dev/tty1");
        assertEquals(TaskStderr.Kind.TERMINAL, TaskStderr.kind(0020600, (5 << 8) | 1), "/dev/console");
        assertEquals(TaskStderr.Kind.OTHER, TaskStderr.kind(0020666, (5 << 8) | 2), "/dev/ptmx");
        assertEquals(TaskStderr.Kind.OTHER, TaskStderr.kind(0020666, (1 << 8) | 3), "/dev/null");
        assertEquals(TaskStderr.Kind.OTHER, TaskStderr.kind(0060660, (8 << 8)), "a block device");
        assertEquals(TaskStderr.Kind.OTHER, TaskStderr.kind(0020660, (195 << 8)), "/dev/nvidia0");
    }
}

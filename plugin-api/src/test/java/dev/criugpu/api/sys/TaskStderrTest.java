package dev.criugpu.api.sys;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Real processes whose fd 2 is a pipe, a file, a file open only for reading, /dev/null, or closed. */
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
        Process p = new ProcessBuilder("sh", "-c", setup + "echo ready; exec sleep 60").redirectError(stderr).start();
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
        assertEquals("its stderr (/dev/null) is no pipe, terminal or file",
                TaskStderr.tell((int) start("", ProcessBuilder.Redirect.DISCARD).pid(), "the reason"));
        assertEquals("it has no stderr to say so on",
                TaskStderr.tell((int) start("exec 2>&-; ", ProcessBuilder.Redirect.PIPE).pid(), "the reason"));
        assertEquals("it has no stderr to say so on", TaskStderr.tell(Integer.MAX_VALUE, "the reason"));
    }

    @Test
    void terminalsPipesAndFilesCountOtherDevicesDoNot() {
        assertTrue(TaskStderr.writable(0010644, 0));
        assertTrue(TaskStderr.writable(0100644, 0));
        assertTrue(TaskStderr.writable(0020620, (136 << 8) | 3), "/dev/pts/3");
        assertTrue(TaskStderr.writable(0020620, (4 << 8) | 1), "/dev/tty1");
        assertTrue(TaskStderr.writable(0020600, (5 << 8) | 1), "/dev/console");
        assertFalse(TaskStderr.writable(0020666, (1 << 8) | 3), "/dev/null");
        assertFalse(TaskStderr.writable(0060660, (8 << 8)), "a block device");
        assertFalse(TaskStderr.writable(0020660, (195 << 8)), "/dev/nvidia0");
        assertFalse(TaskStderr.writable(0140777, 0), "a socket");
    }
}

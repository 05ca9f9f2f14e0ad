package dev.criugpu.cli;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code criu-gpu check} as root runs it on another user's process: a name, a command line and a deleted file's name
 * with terminal escapes in them (a name {@code x\e[2J\e[H} cleared root's terminal) come out escaped.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ShownTextTest {
    @TempDir
    Path dir;
    private Process task;

    @AfterEach
    void stop() throws Exception {
        if (task != null) {
            task.getOutputStream().close();
            task.waitFor();
        }
    }

    @Test
    void checkPrintsNoControlCharacterOfAProcessItLooksAt() throws IOException {
        task = new ProcessBuilder("sh", "-c", "printf 'x\\033[2J\\033[H' > /proc/$$/comm; f=$(printf '" + dir
                + "/held\\033[31m'); exec 5>\"$f\"; rm \"$f\"; echo ready; read x", "sh", "arg\u001b]0;title\u0007")
                .redirectErrorStream(true).start();
        assertEquals("ready\n", new String(task.getInputStream().readNBytes(6), StandardCharsets.UTF_8));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Main.run(new String[] {"check", "--verbose", Long.toString(task.pid())}, new PrintStream(out, true),
                new PrintStream(err, true));

        String shown = out.toString(StandardCharsets.UTF_8);
        assertTrue(shown.contains(task.pid() + " x\\x1b[2J\\x1b[H"), "the name, escaped:\n" + shown);
        assertTrue(shown.contains("held\\x1b[31m"), "the deleted file, escaped:\n" + shown);
        byte[] bytes = out.toByteArray();
        for (int i = 0; i < bytes.length; i++) {
            int b = bytes[i] & 0xff;
            assertTrue(b == '\n' || b == '\t' || (b >= 0x20 && b != 0x7f), "byte " + i + " is " + b + " in:\n" + shown);
        }
        assertEquals("", err.toString(StandardCharsets.UTF_8));
    }
}

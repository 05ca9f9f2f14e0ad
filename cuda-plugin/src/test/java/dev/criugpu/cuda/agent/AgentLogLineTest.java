package dev.criugpu.cuda.agent;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The agent's log comes from criu's first line, once criu knows its images directory (the agent starts before). */
class AgentLogLineTest {
    @Test
    void theFirstLineNamesTheLogWhichIsCreatedPrivate(@TempDir Path dir) throws IOException {
        Path log = dir.resolve("cuda-plugin-agent.log");
        try (PrintStream out = CudaAgent.openLog("log " + log)) {
            out.println("hello");
        }
        assertEquals("hello\n", Files.readString(log));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(log)));
    }

    @Test
    void aPathWithSpacesIsTakenWhole(@TempDir Path dir) throws IOException {
        Path log = dir.resolve("an images dir").resolve("agent.log");
        Files.createDirectories(log.getParent());
        CudaAgent.openLog("log " + log).close();
        assertTrue(Files.isRegularFile(log));
    }

    @Test
    void anythingElseFirstIsRefused(@TempDir Path dir) {
        IOException none = assertThrows(IOException.class, () -> CudaAgent.openLog(null));
        assertEquals("criu went away before it named the agent's log", none.getMessage());
        IOException call = assertThrows(IOException.class, () -> CudaAgent.openLog("call 1 state 42"));
        assertEquals("criu's first line is not its log file: call 1 state 42", call.getMessage());
    }

    @Test
    void aNameThatExistsIsRefusedNotFollowed(@TempDir Path dir) throws IOException {
        Path target = Files.writeString(dir.resolve("target"), "keep");
        Path log = Files.createSymbolicLink(dir.resolve("agent.log"), target);
        assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> CudaAgent.openLog("log " + log));
        assertEquals("keep", Files.readString(target));
    }

    @Test
    void aLogPathWithALineBreakCannotBeSentAndSaysSo() {
        AgentClient client = AgentClient.launch("cli", 0, java.util.List.of(), false);
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> client.logTo(Path.of("/img/a\nb")));
            assertEquals("/img/a\nb: a line break in the agent's log path cannot be sent to it", e.getMessage());
        } finally {
            try {
                client.done();
            } catch (IOException ignored) {
                // never connected: the pending socket is discarded
            }
        }
    }
}

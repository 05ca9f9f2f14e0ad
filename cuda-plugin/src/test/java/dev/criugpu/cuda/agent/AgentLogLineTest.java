package dev.criugpu.cuda.agent;

import dev.criugpu.api.HelperProcess;
import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.sys.Syscalls;
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

/**
 * The agent's log is a file criu's side creates next to the images once it knows them (the agent starts before), and
 * hands over as an fd with its log line (DESIGN rule 11): the agent opens and creates nothing by name.
 */
class AgentLogLineTest {
    @Test
    void theLogComesAsAnFdWithItsLineAndCriusSideCreatedItPrivate(@TempDir Path dir) throws IOException {
        Path log = dir.resolve("cuda-plugin-agent.log");
        HelperProcess[] pair = HelperProcess.pair();
        try {
            int fd = ImageFiles.createNewFd(dir, log.getFileName().toString());
            pair[0].writeLine(AgentProtocol.LOG, fd);
            Syscalls.libc().close(fd);
            String line = pair[1].readLine();
            try (PrintStream out = CudaAgent.openLog(line, pair[1].takeFd())) {
                out.println("hello");
            }
            assertEquals(-1, pair[1].takeFd());
        } finally {
            pair[0].close();
            pair[1].close();
        }
        assertEquals("hello\n", Files.readString(log));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(log)));
    }

    @Test
    void anythingElseIsRefused(@TempDir Path dir) throws IOException {
        IOException none = assertThrows(IOException.class, () -> CudaAgent.openLog(null, -1));
        assertEquals("criu went away before it handed over the agent's log", none.getMessage());
        IOException call = assertThrows(IOException.class, () -> CudaAgent.openLog("call 1 state 42", -1));
        assertEquals("criu's line is not its log: call 1 state 42", call.getMessage());
        Path named = dir.resolve("named.log");
        IOException path = assertThrows(IOException.class, () -> CudaAgent.openLog("log " + named, -1));
        assertEquals("criu's line is not its log: log " + named, path.getMessage());
        assertTrue(Files.notExists(named), "a log named on the line was created");
        IOException noFd = assertThrows(IOException.class, () -> CudaAgent.openLog("log", -1));
        assertEquals("criu's log line came without its fd", noFd.getMessage());
        int socket = socketFd();
        try {
            IOException notFile = assertThrows(IOException.class, () -> CudaAgent.openLog("log", socket));
            assertEquals("the log criu handed over is not a regular file", notFile.getMessage());
        } finally {
            Syscalls.libc().close(socket);
        }
    }

    /** A socket fd, handed over as the log would be: sent along its own pair and taken on the other side. */
    private static int socketFd() throws IOException {
        HelperProcess[] carrier = HelperProcess.pair();
        try {
            int[] sv = dev.criugpu.api.sys.Sockets.socketPair();
            carrier[0].writeLine(AgentProtocol.LOG, sv[0]);
            Syscalls.libc().close(sv[0]);
            Syscalls.libc().close(sv[1]);
            carrier[1].readLine();
            return carrier[1].takeFd();
        } finally {
            carrier[0].close();
            carrier[1].close();
        }
    }

    @Test
    void aNameThatExistsIsRefusedNotFollowedByCriusSide(@TempDir Path dir) throws IOException {
        Path target = Files.writeString(dir.resolve("target"), "keep");
        Files.createSymbolicLink(dir.resolve("agent.log"), target);
        assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> ImageFiles.createNewFd(dir, "agent.log"));
        assertEquals("keep", Files.readString(target));
    }
}

package dev.criugpu.api.sys;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CriuArgvTest {
    @Test
    void rpcWorkersByTheirArgvOrTheTitleCriuGivesItselfUnderRpc() {
        assertTrue(CriuArgv.rpcWorker(List.of("criu", "swrk", "3")));
        assertTrue(CriuArgv.rpcWorker(List.of("/usr/sbin/criu", "service", "--address", "/run/criu.sock")));
        assertTrue(CriuArgv.rpcWorker(List.of("criu: restore --rpc")));
        assertTrue(CriuArgv.rpcWorker(List.of("criu: dump --rpc -t 1234")));
        assertFalse(CriuArgv.rpcWorker(List.of("criu", "restore", "-D", "/tmp/img")));
        assertFalse(CriuArgv.rpcWorker(List.of("criu", "dump", "-t", "1", "--rpc")));
        assertFalse(CriuArgv.rpcWorker(List.of("criu: dump --rpc-like")));
        assertFalse(CriuArgv.rpcWorker(List.of()));
    }

    @Test
    void theCommandIsTheFirstWordThatIsNoOptionNorAValue() {
        assertTrue(CriuArgv.rpcWorker(List.of("criu", "-v4", "swrk", "3")));
        assertTrue(CriuArgv.rpcWorker(List.of("criu", "--log-file", "/tmp/x.log", "service")));
        assertFalse(CriuArgv.rpcWorker(List.of("criu", "--log-file", "swrk", "dump", "-t", "1")), "swrk names the log");
        assertFalse(CriuArgv.rpcWorker(List.of("criu", "dump", "swrk")), "dump is the command");
    }

    @Test
    void theDynamicLoadersWordsAreTakenOff() {
        List<String> viaLoader = List.of("/opt/criu/ld-linux-x86-64.so.2", "--library-path", "/opt/criu/lib", "--argv0",
                "criu", "/opt/criu/criu.bin", "swrk", "3");
        assertEquals(List.of("criu", "swrk", "3"), CriuArgv.withoutLoader(viaLoader));
        assertTrue(CriuArgv.rpcWorker(viaLoader));
        assertEquals(List.of("/opt/criu/criu.bin", "dump", "-t", "7"), CriuArgv.withoutLoader(
                List.of("/lib64/ld-linux-x86-64.so.2", "--inhibit-cache", "/opt/criu/criu.bin", "dump", "-t", "7")));
        assertEquals(List.of("criu", "dump"), CriuArgv.withoutLoader(List.of("criu", "dump")));
        assertEquals(List.of("/lib/ld-linux.so.2"), CriuArgv.withoutLoader(List.of("/lib/ld-linux.so.2")));
    }
}

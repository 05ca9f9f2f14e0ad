package dev.criugpu.api.sys;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** environ/cmdline read up to a bound: a file as large as its owner likes costs the reader no more than the bound. */
class ProcEntriesTest {
    @Test
    void aFileWithinTheBoundIsReadWhole(@TempDir Path dir) throws Exception {
        Path f = Files.write(dir.resolve("environ"), "A=1\0B=2\0A=3\0".getBytes(StandardCharsets.UTF_8));
        ProcEntries e = ProcEntries.read(f, 1024);
        assertFalse(e.cut());
        assertEquals(List.of("A=1", "B=2", "A=3"), e.entries());
        assertEquals(Map.of("A", "1", "B", "2"), e.asEnvironment(), "the first of a name, as getenv finds it");
    }

    @Test
    void aLargerFileIsCutAtTheBoundAndTheEntryCutInTwoIsLeftOut(@TempDir Path dir) throws Exception {
        String big = "X=" + "x".repeat(3 << 20);
        Path f = Files.write(dir.resolve("environ"), ("A=1\0" + big + "\0NCCL_P2P_DISABLE=1\0").getBytes(StandardCharsets.UTF_8));
        ProcEntries e = ProcEntries.read(f, ProcEntries.ENVIRON_LIMIT);
        assertTrue(e.cut());
        assertEquals(List.of("A=1"), e.entries(), "the setting past the bound is not read");
    }
}

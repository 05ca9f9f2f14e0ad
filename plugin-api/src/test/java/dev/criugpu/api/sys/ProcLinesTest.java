package dev.criugpu.api.sys;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** /proc text read a line at a time: a line longer than the bound is cut, the lines after it are whole. */
class ProcLinesTest {
    private static List<String> lines(Path f, int limit) throws Exception {
        List<String> out = new ArrayList<>();
        ProcLines.forEach(f, limit, out::add);
        return out;
    }

    @Test
    void eachLineWithoutItsNewlineTheLastOneToo(@TempDir Path dir) throws Exception {
        Path f = Files.writeString(dir.resolve("maps"), "a b\n\nc");
        assertEquals(List.of("a b", "", "c"), lines(f, 16));
    }

    @Test
    void linesOfEveryLengthAcrossManyReadsComeOutAsWritten(@TempDir Path dir) throws Exception {
        StringBuilder text = new StringBuilder();
        for (int i = 0; text.length() < 1 << 20; i++) text.append("l".repeat(i % 700)).append(i).append('\n');
        Path f = Files.writeString(dir.resolve("maps"), text);
        assertEquals(Files.readAllLines(f), lines(f, ProcLines.MAPS_LINE_LIMIT));
    }

    @Test
    void aLineOverTheBoundIsCutAndTheNextOneIsWhole(@TempDir Path dir) throws Exception {
        Path f = Files.writeString(dir.resolve("maps"), "7f00-7f01 r--p " + "y".repeat(1 << 20) + "\nnext line\n");
        List<String> got = lines(f, 100);
        assertEquals(2, got.size());
        assertEquals(("7f00-7f01 r--p " + "y".repeat(100)).substring(0, 100), got.get(0));
        assertEquals("next line", got.get(1));
    }

    @Test
    void aFileNameThatIsNoUtf8IsReadNotThrown(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes("7f00-7f01 r--p 00000000 08:01 5 /tmp/".getBytes(StandardCharsets.US_ASCII));
        b.writeBytes(new byte[] {(byte) 0xff, (byte) 0xc3});
        b.writeBytes("\n7f01-7f02 rw-s 00000000 00:05 9 /dev/nvidia0\n".getBytes(StandardCharsets.US_ASCII));
        Path f = Files.write(dir.resolve("maps"), b.toByteArray());
        assertEquals(List.of("7f00-7f01 r--p 00000000 08:01 5 /tmp/\ufffd\ufffd", "7f01-7f02 rw-s 00000000 00:05 9 /dev/nvidia0"),
                lines(f, ProcLines.MAPS_LINE_LIMIT));
    }
}

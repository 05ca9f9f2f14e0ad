package dev.criugpu.api;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PrintableTest {
    @Test
    void controlCharactersAndReorderingMarksAreWrittenAsHexBytes() {
        assertEquals("x\\x1b[2J\\x1b[H", Printable.of("x\u001b[2J\u001b[H"));
        assertEquals("a\\x0ab\tc\\x0d\\x7f\\x00", Printable.of("a\nb\tc\r\u007f\u0000"), "a tab stays");
        assertEquals("csi \\xc2\\x9b2J", Printable.of("csi \u009b2J"), "a C1 control");
        assertEquals("abc\\xe2\\x80\\xaefed", Printable.of("abc\u202efed"), "a right-to-left override");
        assertEquals("\\xe2\\x81\\xa6\\xe2\\x80\\xa8", Printable.of("\u2066\u2028"));
    }

    @Test
    void printableTextAndBackslashesPassUnchanged() {
        String text = "GPU-8f3c 名前 é ü \\x1b /dev/nvidia0 (deleted) 🙂";
        assertEquals(text, Printable.of(text));
    }

    @Test
    void aStreamKeepsNewlinesAndEscapesEachByteThatIsNotUtf8() {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        PrintStream out = Printable.stream(sink);
        out.println("comm x\u001b]0;title\u0007");
        out.write(new byte[] {'n', (byte) 0xff, (byte) 0xc3, '(', (byte) 0xed, (byte) 0xa0, (byte) 0x80, (byte) 0xe0,
                (byte) 0x80, (byte) 0xaf, '\n'}, 0, 11);
        out.flush();
        assertEquals("comm x\\x1b]0;title\\x07\nn\\xff\\xc3(\\xed\\xa0\\x80\\xe0\\x80\\xaf\n",
                sink.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aStreamWaitsForTheRestOfASequenceCutBetweenWrites() {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        PrintStream out = Printable.stream(sink);
        byte[] e = "é\u009b".getBytes(StandardCharsets.UTF_8);
        out.write(e, 0, 1);
        out.write(e, 1, 2);
        out.write(e, 3, 1);
        out.write(new byte[] {(byte) 0xe2, (byte) 0x82}, 0, 2);
        out.flush();
        assertEquals("é\\xc2\\x9b", sink.toString(StandardCharsets.UTF_8), "a cut sequence waits");
        out.close(); // a sequence still cut at the end: its bytes are escaped
        assertEquals("é\\xc2\\x9b\\xe2\\x82", sink.toString(StandardCharsets.UTF_8));
    }
}

package dev.criugpu.api;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class LogSinkTest {
    /** A GPU UUID read from an image, a process name: in criu's log (and its copy in syslog) as one escaped line. */
    @Test
    void whatOthersChoseReachesTheLogEscapedOnOneLine() {
        List<String> printed = new ArrayList<>();
        LogSink.write((level, line) -> printed.add(level + " " + line), LogLevel.ERROR,
                "Error (cuda_plugin): no GPU GPU-\u001b]0;x\u0007\nError (cuda_plugin): forged");
        LogSink.drain();
        assertEquals(List.of("1 Error (cuda_plugin): no GPU GPU-\\x1b]0;x\\x07\\x0aError (cuda_plugin): forged\n"), printed);
    }
}

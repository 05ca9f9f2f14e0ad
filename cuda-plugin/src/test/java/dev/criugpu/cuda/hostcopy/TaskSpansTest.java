package dev.criugpu.cuda.hostcopy;

import dev.criugpu.cuda.hostcopy.TaskSpans.Span;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TaskSpansTest {
    @Test
    void onlyPrivateAnonymousWritableMappingsCount() {
        assertEquals(new Span(0x7f0000000000L, 0x7f0000200000L),
                TaskSpans.parse("7f0000000000-7f0000200000 rw-p 00000000 00:00 0 "));
        assertEquals(new Span(0x1000, 0x2000), TaskSpans.parse("1000-2000 rw-p 00000000 00:00 0      [anon:cuda]"));
        assertNull(TaskSpans.parse("1000-2000 rw-s 00000000 00:05 1234 /dev/zero (deleted)"), "shared");
        assertNull(TaskSpans.parse("1000-2000 r--p 00000000 00:00 0 "), "read-only");
        assertNull(TaskSpans.parse("1000-2000 rw-p 00001000 08:01 77 /usr/lib/libc.so.6"), "a file's");
        assertNull(TaskSpans.parse("1000-2000 rw-p 00000000 00:00 0 [heap]"), "the heap existed before");
        assertNull(TaskSpans.parse("1000-2000 rw-p 00000000 00:00 0 [stack]"));
        assertNull(TaskSpans.parse("garbage"));
    }

    @Test
    void addedIsWhatNoEarlierMappingCovered() {
        List<Span> before = List.of(new Span(0x1000, 0x3000), new Span(0x8000, 0x9000));
        List<Span> after = List.of(new Span(0x1000, 0x5000), new Span(0x6000, 0x7000), new Span(0x7000, 0xa000),
                new Span(0x20000, 0x30000));
        // 0x3000-0x5000 grew onto the first; 0x6000-0x8000 and 0x9000-0xa000 are new around the second; the last is new
        assertEquals(List.of(new Span(0x3000, 0x5000), new Span(0x6000, 0x8000), new Span(0x9000, 0xa000),
                new Span(0x20000, 0x30000)), TaskSpans.added(before, after));
        assertTrue(TaskSpans.added(after, after).isEmpty());
        assertEquals(after.subList(3, 4), TaskSpans.added(after.subList(0, 3), after.subList(3, 4)));
    }

    @Test
    void thisProcessHasMappings() throws Exception {
        assertTrue(TaskSpans.total(TaskSpans.privateAnonymous((int) ProcessHandle.current().pid())) > 0);
    }
}

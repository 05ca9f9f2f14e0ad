package dev.criugpu.cuda.hostcopy;

import dev.criugpu.api.sys.ProcLines;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The private anonymous writable mappings of a task, and what the driver's checkpoint added to them: the driver copies
 * device memory into mappings of its own that it makes in the task while the task is frozen, so what is mapped after
 * the checkpoint and was not before is the host copy (and nothing else the task could have made meanwhile).
 */
public final class TaskSpans {
    /** Bytes {@code [start, end)} of a task's address space. */
    public record Span(long start, long end) {
        public long length() {
            return end - start;
        }
    }

    private TaskSpans() {
    }

    /** The task's private anonymous writable mappings (no file, no name but an {@code [anon:...]} one), in address order. */
    public static List<Span> privateAnonymous(int pid) throws IOException {
        List<Span> spans = new ArrayList<>();
        ProcLines.forEach(Path.of("/proc", Integer.toString(pid), "maps"), ProcLines.MAPS_LINE_LIMIT, line -> {
            Span s = parse(line);
            if (s != null) spans.add(s);
        });
        return spans;
    }

    /** A maps line's span if it is a private anonymous writable mapping, else null. */
    static Span parse(String line) {
        String[] f = line.split(" +", 6);
        if (f.length < 5 || f[1].length() != 4 || !f[1].startsWith("rw") || f[1].charAt(3) != 'p' || !f[4].equals("0")) {
            return null;
        }
        String name = f.length == 6 ? f[5].trim() : "";
        if (!name.isEmpty() && !name.startsWith("[anon:")) return null;
        int dash = f[0].indexOf('-');
        if (dash <= 0) return null;
        try {
            return new Span(Long.parseUnsignedLong(f[0], 0, dash, 16), Long.parseUnsignedLong(f[0], dash + 1, f[0].length(), 16));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** The parts of {@code after} that no span of {@code before} covers, adjacent parts joined; both in address order. */
    public static List<Span> added(List<Span> before, List<Span> after) {
        List<Span> out = new ArrayList<>();
        int i = 0;
        for (Span a : after) {
            long from = a.start();
            while (i < before.size() && before.get(i).end() <= from) i++;
            for (int j = i; j < before.size() && before.get(j).start() < a.end() && from < a.end(); j++) {
                Span b = before.get(j);
                if (b.start() > from) add(out, new Span(from, b.start()));
                from = Math.max(from, b.end());
            }
            if (from < a.end()) add(out, new Span(from, a.end()));
        }
        return out;
    }

    private static void add(List<Span> out, Span s) {
        if (!out.isEmpty() && out.getLast().end() == s.start()) {
            out.set(out.size() - 1, new Span(out.getLast().start(), s.end()));
        } else {
            out.add(s);
        }
    }

    public static long total(List<Span> spans) {
        long n = 0;
        for (Span s : spans) n += s.length();
        return n;
    }
}

package dev.criugpu.amdgpu.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A trace the simulator wrote ({@link KfdSimulator#traceStart}), split the way it can be compared: the lines of
 * criu's hook thread and of the restored tasks' main threads keep their order, except that a run of render-node
 * opens is sorted (plugins open them in sysfs's readdir order, which is the file system's); the lines of other
 * threads (SDMA workers, whose interleaving is up to the scheduler) form a sorted list, their SDMA submissions summed
 * up per thread kind and render node.
 *
 * @param ordered    lines of {@code criu} and {@code task}, in order
 * @param concurrent lines of {@code criu-thread} and {@code task-thread}, sorted, SDMA submissions summed up
 */
public record KfdTrace(List<String> ordered, List<String> concurrent) {
    private static final String RENDER_OPEN = "open /dev/dri/renderD";

    /** Reads {@code file}; each key of {@code replace} is replaced by its value first (e.g. a task's pid). */
    public static KfdTrace read(Path file, Map<String, String> replace) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> ordered = new ArrayList<>();
        List<String> concurrent = new ArrayList<>();
        Map<String, long[]> sdma = new TreeMap<>();
        for (String raw : lines) {
            String line = raw;
            for (var r : replace.entrySet()) line = line.replace(r.getKey(), r.getValue());
            String who = line.substring(0, line.indexOf(' '));
            String what = line.substring(who.length() + 1);
            if (who.equals("criu") || who.equals("task")) {
                int run = ordered.size();
                while (what.startsWith(RENDER_OPEN) && run > 0 && ordered.get(run - 1).startsWith(who + " " + RENDER_OPEN)
                        && ordered.get(run - 1).compareTo(line) > 0) {
                    run--;
                }
                ordered.add(run, line);
            } else if (what.startsWith("sdma ")) {
                // "sdma renderD<n> packets=<p> bytes=<b>"
                String[] f = what.split(" ");
                long[] sum = sdma.computeIfAbsent(who + " sdma " + f[1], k -> new long[3]);
                sum[0]++;
                sum[1] += Long.parseLong(f[2].substring("packets=".length()));
                sum[2] += Long.parseLong(f[3].substring("bytes=".length()));
            } else {
                concurrent.add(line);
            }
        }
        sdma.forEach((k, v) -> concurrent.add(k + " submissions=" + v[0] + " packets=" + v[1] + " bytes=" + v[2]));
        concurrent.sort(null);
        return new KfdTrace(List.copyOf(ordered), List.copyOf(concurrent));
    }

    /**
     * The differences between two line lists as hunks: each names the last common line before it (its first four
     * words), then the lines only {@code a} has ("- ") and the lines only {@code b} has ("+ "), from a longest common
     * subsequence.
     */
    public static String diff(List<String> a, List<String> b) {
        int[][] lcs = new int[a.size() + 1][b.size() + 1];
        for (int i = a.size() - 1; i >= 0; i--) {
            for (int j = b.size() - 1; j >= 0; j--) {
                lcs[i][j] = a.get(i).equals(b.get(j)) ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
            }
        }
        StringBuilder out = new StringBuilder();
        StringBuilder hunk = new StringBuilder();
        String anchor = "(start)";
        int i = 0;
        int j = 0;
        while (i < a.size() || j < b.size()) {
            if (i < a.size() && j < b.size() && a.get(i).equals(b.get(j))) {
                if (!hunk.isEmpty()) {
                    out.append("after ").append(anchor).append('\n').append(hunk);
                    hunk.setLength(0);
                }
                String[] words = a.get(i).split(" ");
                anchor = String.join(" ", Arrays.copyOf(words, Math.min(4, words.length)));
                i++;
                j++;
            } else if (j == b.size() || (i < a.size() && lcs[i + 1][j] >= lcs[i][j + 1])) {
                hunk.append("- ").append(a.get(i++)).append('\n');
            } else {
                hunk.append("+ ").append(b.get(j++)).append('\n');
            }
        }
        if (!hunk.isEmpty()) out.append("after ").append(anchor).append('\n').append(hunk);
        return out.toString();
    }
}

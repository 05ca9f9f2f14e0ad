package dev.criugpu.it;

import dev.criugpu.it.flood.FloodJar;
import dev.criugpu.it.flood.FloodPlugin;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 12 (DESIGN rule 9) in criu 4.2.1: while a hook runs, several Java threads and the hook thread flood criu's
 * log ({@link FloodPlugin}, loaded in cuda_plugin's place). Every line in criu's log is whole, none of ours is
 * longer than the cap, every line of every thread is there once and in its thread's order; the JVM's own warnings
 * and -Xlog output, an uncaught exception's trace and System.err go into criu's log, not criu's stderr.
 */
@ExtendWith(DockerRequired.class)
class LogFloodIT {
    /** What criu puts before each line it prints through print_on_level. */
    private static final Pattern TIMESTAMP = Pattern.compile("^\\(\\d+\\.\\d{6}\\) ");
    private static final Pattern ANY_TIMESTAMP = Pattern.compile("\\(\\d+\\.\\d{6}\\) ");
    private static final Pattern FLOOD = Pattern.compile("^\\(\\d+\\.\\d{6}\\) cuda_plugin: flood (main|\\d) (\\d+) (x+)"
            + "( \\[cut: \\d+ more bytes\\])?$");
    private static final Pattern FLOOD_ANYWHERE = Pattern.compile("flood (main|\\d) \\d+ x");
    private static final int CAP = 4096;
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    @Test
    void everyLineOfAFloodFromSeveralThreadsIsWholeCappedAndThere(CriuContainer criu) {
        PluginDirCopy lib = PluginDirCopy.make(criu, "/opt/flood-lib").withJarFirst("aaa-flood.jar", FloodJar.bytes())
                .withOptions("-XX:+ZGenerational", "-Xlog:gc+init=info:stderr");
        CounterWorkload counter = CounterWorkload.startSingle(criu, "/tmp/flood");
        CriuRun dump = CriuCommand.dump(counter.rootPid(), "/tmp/flood.img").args("--lib", lib.dir).forced()
                .runIn(criu).orFail();
        counter.awaitGone();
        HookTrace.assertTraced(dump, HookTrace.CUDA, "PAUSE_DEVICES", HookTrace.pid(counter.rootPid()));

        Map<String, List<Integer>> seen = new HashMap<>();
        int cut = 0;
        for (String line : dump.log().lines().toList()) {
            Matcher ts = TIMESTAMP.matcher(line);
            if (!ts.lookingAt()) {
                // criu's own unprefixed lines (the parasite's); a fragment of a line of ours would land here
                assertTrue(line.startsWith("pie: ") || line.startsWith("task_args->"), "a broken line: " + abbrev(line));
                continue;
            }
            assertEquals(1, ANY_TIMESTAMP.matcher(line).results().count(), "two lines in one: " + abbrev(line));
            if (!FLOOD_ANYWHERE.matcher(line).find()) continue;
            Matcher m = FLOOD.matcher(line);
            assertTrue(m.matches(), "a flood line not whole: " + abbrev(line));
            int bytes = line.substring(ts.end()).getBytes(StandardCharsets.UTF_8).length + 1;
            assertTrue(bytes <= CAP, "a line of " + bytes + " bytes: " + abbrev(line));
            int i = Integer.parseInt(m.group(2));
            boolean isLong = i % FloodPlugin.LONG_EVERY == 0;
            assertEquals(isLong, m.group(4) != null, "cut marker on line " + abbrev(line));
            if (isLong) cut++;
            seen.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(i);
        }
        List<Integer> all = java.util.stream.IntStream.range(0, FloodPlugin.LINES).boxed().toList();
        assertEquals(FloodPlugin.THREADS + 1, seen.size(), "sources: " + seen.keySet());
        seen.forEach((who, indexes) -> assertEquals(all, indexes, "lines of " + who + " missing, doubled or reordered"));
        assertEquals((FloodPlugin.THREADS + 1) * ((FloodPlugin.LINES + FloodPlugin.LONG_EVERY - 1) / FloodPlugin.LONG_EVERY),
                cut, "lines cut to the cap");

        String stderr = dump.result().stderr();
        for (String inLog : List.of("JVM: OpenJDK 64-Bit Server VM warning: Ignoring option ZGenerational",
                "[info][gc,init] ",
                "Warn  (criu-java-gpu): Exception in thread \"flood-crash\" java.lang.IllegalStateException: flood worker gave up",
                "Warn  (criu-java-gpu): \tat dev.criugpu.it.flood.FloodPlugin",
                "Warn  (criu-java-gpu): flood stderr " + counter.rootPid())) {
            assertTrue(dump.log().contains(inLog), "criu's log lacks '" + inLog + "'");
        }
        for (String notOnStderr : List.of("ZGenerational", "gc,init", "flood worker gave up", "flood stderr")) {
            assertFalse(stderr.contains(notOnStderr), "criu's stderr has '" + notOnStderr + "':\n" + stderr);
        }
    }

    private static String abbrev(String line) {
        return line.length() < 300 ? line : line.substring(0, 200) + "...(" + line.length() + " chars)..."
                + line.substring(line.length() - 80);
    }
}

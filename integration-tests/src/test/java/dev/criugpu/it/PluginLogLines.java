package dev.criugpu.it;

import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Assertions on the lines our plugins leave in a criu log that a container engine kept (dump.log, restore.log). */
public final class PluginLogLines {
    private PluginLogLines() {
    }

    /** criu's line for each plugin .so it loaded from its default directory (the engines pass no --lib). */
    public static void assertPluginsLoaded(String log, String name) {
        assertOneLine(log, name, "Plugin \"cuda_plugin\" \\(version \\d+ hooks \\d+\\)");
        assertOneLine(log, name, "Plugin \"amdgpu_plugin\" \\(version \\d+ hooks \\d+\\)");
    }

    /** Exactly one line of {@code log} (criu's "(secs) text" lines) whose text matches {@code regex}. */
    public static void assertOneLine(String log, String name, String regex) {
        Pattern p = Pattern.compile("^\\(\\s*[\\d.]+\\)\\s+" + regex + "$");
        long n = log.lines().filter(l -> p.matcher(l).matches()).count();
        assertEquals(1, n, "expected one line in " + name + " matching '" + regex + "'; plugin lines:\n" + pluginLines(log));
    }

    /** The lines that mention a plugin, for failure messages. */
    public static String pluginLines(String log) {
        return String.join("\n", log.lines().filter(l -> l.contains("plugin")).toList());
    }
}

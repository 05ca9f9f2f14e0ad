package dev.criugpu.api;

import java.util.List;

/** How our lines look in criu's log: like criu's own pr_err/pr_warn, with the plugin name. */
final class LogLines {
    private LogLines() {
    }

    /** One line of text with the prefix of {@code level}; no newline. */
    static String line(String plugin, LogLevel level, String text) {
        return switch (level) {
            case ERROR -> "Error (" + plugin + "): " + text;
            case WARN -> "Warn  (" + plugin + "): " + text;
            default -> plugin + ": " + text;
        };
    }

    /** Every line of {@code message}, each with its prefix: criu's log shows no line without one. */
    static List<String> of(String plugin, LogLevel level, String message) {
        return message.lines().map(l -> line(plugin, level, l)).toList();
    }
}

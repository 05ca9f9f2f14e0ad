package dev.criugpu.api;

/** How our lines look in criu's log: like criu's own pr_err/pr_warn, with the plugin name. */
final class LogLines {
    private LogLines() {
    }

    static String format(String plugin, LogLevel level, String message) {
        String m = message.endsWith("\n") ? message : message + "\n";
        return switch (level) {
            case ERROR -> "Error (" + plugin + "): " + m;
            case WARN -> "Warn  (" + plugin + "): " + m;
            default -> plugin + ": " + m;
        };
    }
}

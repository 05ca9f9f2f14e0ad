package dev.criugpu.api.log;

import dev.criugpu.api.CriuServices;
import dev.criugpu.api.LogLevel;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where slf4j output goes: the criu log of the plugin whose package the logger belongs to, else stderr (CLI,
 * tests, code outside any plugin).
 */
public final class CriuLog {
    private static final Map<String, CriuServices> SINKS = new ConcurrentHashMap<>();
    private static volatile LogLevel stderrThreshold = LogLevel.WARN;

    private CriuLog() {
    }

    /** Loggers named under {@code packagePrefix} write into {@code services}' log from now on. */
    public static void register(String packagePrefix, CriuServices services) {
        SINKS.put(packagePrefix, services);
    }

    public static void stderrThreshold(LogLevel level) {
        stderrThreshold = level;
    }

    static CriuServices sinkFor(String loggerName) {
        CriuServices best = null;
        int bestLen = -1;
        for (Map.Entry<String, CriuServices> e : SINKS.entrySet()) {
            String p = e.getKey();
            if ((loggerName.equals(p) || loggerName.startsWith(p + ".")) && p.length() > bestLen) {
                best = e.getValue();
                bestLen = p.length();
            }
        }
        if (best == null && SINKS.size() == 1) best = SINKS.values().iterator().next();
        return best;
    }

    static boolean isLoggable(String loggerName, LogLevel level) {
        CriuServices s = sinkFor(loggerName);
        return s != null ? s.isLoggable(level) : level.id <= stderrThreshold.id;
    }

    static void log(String loggerName, LogLevel level, String message) {
        CriuServices s = sinkFor(loggerName);
        if (s != null) {
            s.log(level, message);
        } else if (level.id <= stderrThreshold.id) {
            System.err.println(level + " " + message);
        }
    }
}

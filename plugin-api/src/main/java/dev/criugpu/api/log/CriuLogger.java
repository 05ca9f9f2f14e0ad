package dev.criugpu.api.log;

import dev.criugpu.api.LogLevel;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.AbstractLogger;
import org.slf4j.helpers.MessageFormatter;

/** An slf4j logger writing through {@link CriuLog}. TRACE maps to criu's DEBUG. */
final class CriuLogger extends AbstractLogger {
    CriuLogger(String name) {
        this.name = name;
    }

    private static LogLevel level(Level l) {
        return switch (l) {
            case ERROR -> LogLevel.ERROR;
            case WARN -> LogLevel.WARN;
            case INFO -> LogLevel.INFO;
            case DEBUG, TRACE -> LogLevel.DEBUG;
        };
    }

    @Override
    protected String getFullyQualifiedCallerName() {
        return null;
    }

    @Override
    protected void handleNormalizedLoggingCall(Level l, Marker marker, String pattern, Object[] args,
                                               Throwable t) {
        String msg = MessageFormatter.basicArrayFormat(pattern, args);
        if (t != null) msg = msg + ": " + t;
        CriuLog.log(name, level(l), msg);
    }

    @Override public boolean isTraceEnabled() { return CriuLog.isLoggable(name, LogLevel.DEBUG); }
    @Override public boolean isTraceEnabled(Marker m) { return isTraceEnabled(); }
    @Override public boolean isDebugEnabled() { return CriuLog.isLoggable(name, LogLevel.DEBUG); }
    @Override public boolean isDebugEnabled(Marker m) { return isDebugEnabled(); }
    @Override public boolean isInfoEnabled() { return CriuLog.isLoggable(name, LogLevel.INFO); }
    @Override public boolean isInfoEnabled(Marker m) { return isInfoEnabled(); }
    @Override public boolean isWarnEnabled() { return CriuLog.isLoggable(name, LogLevel.WARN); }
    @Override public boolean isWarnEnabled(Marker m) { return isWarnEnabled(); }
    @Override public boolean isErrorEnabled() { return CriuLog.isLoggable(name, LogLevel.ERROR); }
    @Override public boolean isErrorEnabled(Marker m) { return isErrorEnabled(); }
}

package dev.criugpu.api;

/** criu's log levels (LOG_MSG .. LOG_DEBUG); criu prints a message when its level is at most the -v level. */
public enum LogLevel {
    MSG(0), ERROR(1), WARN(2), INFO(3), DEBUG(4);

    public final int id;

    LogLevel(int id) {
        this.id = id;
    }
}

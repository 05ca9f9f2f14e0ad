package dev.criugpu.it;

import java.util.List;
import java.util.regex.Pattern;

/** A finished criu command: its exit status and output, and the log it wrote. */
public record CriuRun(CommandResult result, String log) {

    /** This run, or an AssertionError with criu's exit code, stderr and the tail of its log. */
    public CriuRun orFail() {
        if (!result.succeeded()) {
            throw new AssertionError(result.describe() + "\n--- criu log (last 60 lines)\n" + logTail(60));
        }
        return this;
    }

    public List<String> logLinesContaining(String text) {
        return log.lines().filter(l -> l.contains(text)).toList();
    }

    public List<String> logLinesMatching(Pattern p) {
        return log.lines().filter(l -> p.matcher(l).find()).toList();
    }

    public String logTail(int lines) {
        List<String> all = log.lines().toList();
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }
}

package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Finding;
import dev.criugpu.cli.check.JobCheck.Kind;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What the checks found so far: the report's lines, and the criu options they call for, in the order found. */
final class Findings {
    final List<Finding> lines = new ArrayList<>();
    /** criu dump options; value "" for a flag. */
    final Map<String, String> dumpOptions = new LinkedHashMap<>();
    final Map<String, String> restoreOptions = new LinkedHashMap<>();

    void add(Kind kind, String topic, String text) {
        lines.add(new Finding(kind, topic, text));
    }

    /**
     * One thing ({@code items} of one) as a line of its own, {@code prefix + item}; several as one line,
     * {@code prefix + group}, that keeps them as its items.
     */
    void addGrouped(Kind kind, String topic, String prefix, List<String> items, String group) {
        if (items.isEmpty()) return;
        if (items.size() == 1) {
            add(kind, topic, prefix + items.getFirst());
        } else {
            lines.add(new Finding(kind, topic, prefix + group, items));
        }
    }

    void dumpOption(String option, String value) {
        dumpOptions.put(option, value);
    }

    void restoreOption(String option, String value) {
        restoreOptions.put(option, value);
    }
}

package dev.criugpu.inventory.inspect;

import dev.criugpu.api.Printable;

import java.util.ArrayDeque;
import java.util.Deque;

/** Builds compact-but-indented JSON text by hand: objects, arrays, strings, numbers, booleans, null. */
final class JsonWriter {
    private final StringBuilder sb = new StringBuilder();
    /** Per open container: has it got a member yet. */
    private final Deque<boolean[]> open = new ArrayDeque<>();
    private boolean afterName;

    JsonWriter beginObject() {
        return begin('{');
    }

    JsonWriter endObject() {
        return end('}');
    }

    JsonWriter beginArray() {
        return begin('[');
    }

    JsonWriter endArray() {
        return end(']');
    }

    JsonWriter name(String name) {
        separate();
        string(name);
        sb.append(": ");
        afterName = true;
        return this;
    }

    JsonWriter value(String s) {
        separate();
        if (s == null) sb.append("null");
        else string(s);
        return this;
    }

    JsonWriter value(long n) {
        separate();
        sb.append(n);
        return this;
    }

    JsonWriter value(boolean b) {
        separate();
        sb.append(b);
        return this;
    }

    JsonWriter nullValue() {
        separate();
        sb.append("null");
        return this;
    }

    @Override
    public String toString() {
        return sb.toString();
    }

    private JsonWriter begin(char c) {
        separate();
        sb.append(c);
        open.push(new boolean[1]);
        return this;
    }

    private JsonWriter end(char c) {
        boolean any = open.pop()[0];
        if (any) newline();
        sb.append(c);
        return this;
    }

    private void separate() {
        if (afterName) {
            afterName = false;
            return;
        }
        if (open.isEmpty()) return;
        boolean[] any = open.peek();
        if (any[0]) sb.append(',');
        any[0] = true;
        newline();
    }

    private void newline() {
        sb.append('\n').append("  ".repeat(open.size()));
    }

    private void string(String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    // also what a terminal acts on (Printable): the report is read on one as often as parsed
                    if (Printable.unsafe(c)) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        sb.append('"');
    }
}

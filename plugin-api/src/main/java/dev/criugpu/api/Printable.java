package dev.criugpu.api;

import java.io.ByteArrayOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Text that others chose (a process's name and command line, file names and fd targets from /proc, a GPU UUID from an
 * image) as root shows it: on a terminal ({@code criu-gpu}), in criu's log, in the system log, on a task's stderr.
 * A terminal acts on control characters (ESC starts sequences that clear it, move the cursor, set its title or its
 * clipboard), and a log line is forged by a newline. So every byte that is not plain printable text is written as
 * {@code \xHH}, one per byte of its UTF-8: the C0 controls but tab (newline and carriage return included; a tab only
 * moves to the next column, and Java's stack traces in criu's log start with one) and DEL, the C1
 * controls U+0080–U+009F (U+009B is CSI to some terminals), the marks and overrides that reorder bidirectional text
 * (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), the line and paragraph separators, and every byte that is
 * not part of well-formed UTF-8. A backslash is left as it is: the escape is for the eye, not to be reversed.
 */
public final class Printable {
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    private Printable() {
    }

    /** {@code text} with every unsafe character escaped, a newline too (one line of a log). */
    public static String of(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream(b.length + 16);
        escape(b, 0, b.length, false, true, out);
        return out.toString(StandardCharsets.UTF_8);
    }

    /**
     * A stream that writes to {@code out} what it is given, escaped but for newlines (what a command prints): bytes
     * are passed on at each write but for a UTF-8 sequence cut at its end, which waits for the next write (a flush
     * does not end it: a PrintStream flushes after every array it writes), or, escaped, for {@code close}.
     */
    public static PrintStream stream(OutputStream out) {
        return new PrintStream(new Escaping(out), true, StandardCharsets.UTF_8);
    }

    /** Whether a terminal or a reader could be misled by code point {@code c} shown as it is. */
    public static boolean unsafe(int c) {
        return (c < 0x20 && c != '\t') || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f
                || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0x2028 || c == 0x2029;
    }

    /**
     * Escapes {@code in[from, to)} into {@code out}; returns where it stopped: {@code to}, or, unless {@code atEnd},
     * where a UTF-8 sequence begins that the bytes up to {@code to} do not complete.
     */
    static int escape(byte[] in, int from, int to, boolean keepNewlines, boolean atEnd, ByteArrayOutputStream out) {
        int i = from;
        while (i < to) {
            int b = in[i] & 0xff;
            if (b < 0x80) {
                if (unsafe(b) && !(keepNewlines && b == '\n')) hex(b, out);
                else out.write(b);
                i++;
                continue;
            }
            int len = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
            if (len > 0 && i + len > to && !atEnd && continuations(in, i + 1, to)) return i;
            int c = len > 0 && i + len <= to ? codePoint(in, i, len) : -1;
            if (c < 0) {
                hex(b, out);
                i++;
            } else {
                if (unsafe(c)) {
                    for (int k = 0; k < len; k++) hex(in[i + k] & 0xff, out);
                } else {
                    out.write(in, i, len);
                }
                i += len;
            }
        }
        return to;
    }

    private static boolean continuations(byte[] in, int from, int to) {
        for (int i = from; i < to; i++) if ((in[i] & 0xc0) != 0x80) return false;
        return true;
    }

    /** The code point of the {@code len}-byte sequence at {@code at}, or -1 where it is not well-formed UTF-8. */
    private static int codePoint(byte[] in, int at, int len) {
        int c = in[at] & (0x7f >> len);
        for (int k = 1; k < len; k++) {
            int b = in[at + k] & 0xff;
            if ((b & 0xc0) != 0x80) return -1;
            c = (c << 6) | (b & 0x3f);
        }
        boolean overlong = (len == 3 && c < 0x800) || (len == 4 && c < 0x10000);
        return overlong || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff ? -1 : c;
    }

    private static void hex(int b, ByteArrayOutputStream out) {
        out.write('\\');
        out.write('x');
        out.write(HEX[b >> 4]);
        out.write(HEX[b & 0xf]);
    }

    /** What {@link #stream} writes through. */
    private static final class Escaping extends FilterOutputStream {
        private byte[] pending = new byte[0];

        Escaping(OutputStream out) {
            super(out);
        }

        @Override
        public synchronized void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) throws IOException {
            pass(b, off, len, false);
        }

        @Override
        public synchronized void close() throws IOException {
            pass(new byte[0], 0, 0, true);
            super.close();
        }

        private void pass(byte[] b, int off, int len, boolean atEnd) throws IOException {
            byte[] in = Arrays.copyOf(pending, pending.length + len);
            System.arraycopy(b, off, in, pending.length, len);
            ByteArrayOutputStream escaped = new ByteArrayOutputStream(in.length + 16);
            int stop = escape(in, 0, in.length, true, atEnd, escaped);
            pending = Arrays.copyOfRange(in, stop, in.length);
            escaped.writeTo(out);
        }
    }
}

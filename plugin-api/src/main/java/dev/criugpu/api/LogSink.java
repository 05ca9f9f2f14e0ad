package dev.criugpu.api;

import dev.criugpu.api.bindings.libc_h;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The one way Java lines reach criu's log, for both plugins and every thread (DESIGN rule 9). criu's
 * {@code print_on_level} formats into one static buffer and takes no lock, and criu's main thread logs through it
 * whenever it likes, so no lock of ours could make another thread's call safe: only criu's main thread, the one
 * that runs the hooks, calls it. Lines of other threads wait in a bounded queue that the hook thread empties when a
 * hook enters or leaves Java (and before each line of its own, so the order of each thread's lines holds). Every
 * line is capped at {@link #MAX_LINE_BYTES}.
 */
final class LogSink {
    /** Longest line handed to criu (its buffer is 8 KiB, including its own prefix). */
    static final int MAX_LINE_BYTES = 4096;
    /** Lines waiting for the hook thread; more are counted and dropped. */
    static final int MAX_QUEUED = 2048;
    private static final String CUT = " [cut: %d more bytes]";
    private static final PrintStream STDERR = System.err;

    /** criu's {@code print_on_level(level, "%s", line)}. */
    @FunctionalInterface
    interface Printer {
        void print(int level, String line);
    }

    private record Line(Printer print, int level, String text) {
    }

    private static final ConcurrentLinkedQueue<Line> QUEUE = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger QUEUED = new AtomicInteger();
    private static final AtomicLong DROPPED = new AtomicLong();
    private static volatile Thread hookThread;
    private static volatile Printer defaultPrint;
    private static volatile boolean errorsToSystemLog;

    private LogSink() {
    }

    /**
     * Called by each bootstrap on criu's main thread: that thread writes from now on. The first plugin's
     * {@code print_on_level} also takes the lines no plugin owns (the JVM's stdout and stderr).
     */
    static synchronized void bind(Printer print) {
        hookThread = Thread.currentThread();
        if (defaultPrint == null && print != null) {
            defaultPrint = print;
            System.setOut(stream(LogLevel.INFO));
            System.setErr(stream(LogLevel.WARN));
        }
    }

    /**
     * Error lines go to the system log as well (syslog; where systemd runs, the journal, with the unit of criu's
     * caller). Set where criu runs as an RPC worker: its caller may throw criu's log away with a failed command
     * (containerd deletes a failed restore's task directory, restore.log with it, and reports only runc's "criu
     * failed: type RESTORE errno 0").
     */
    static void copyErrorsToSystemLog(boolean on) {
        errorsToSystemLog = on;
    }

    /**
     * One line (text without its newline) into criu's log through {@code print}, at once on the hook thread,
     * otherwise at the next hook; to stderr when there is no criu; an error line to the system log too where
     * {@link #copyErrorsToSystemLog}. Lines carry what users and images chose (process names, paths, GPU UUIDs) to
     * root's terminal and logs: {@link Printable} escapes what a terminal would act on, and a newline.
     */
    static void write(Printer print, LogLevel level, String text) {
        String shown = cap(Printable.of(text));
        String line = shown + "\n";
        if (errorsToSystemLog && level == LogLevel.ERROR) systemLog(shown);
        if (print == null) {
            STDERR.print(line);
        } else if (hookThread == null || Thread.currentThread() == hookThread) {
            drain();
            printNow(print, level.id, line);
        } else if (QUEUED.incrementAndGet() > MAX_QUEUED) {
            QUEUED.decrementAndGet();
            DROPPED.incrementAndGet();
        } else {
            QUEUE.add(new Line(print, level.id, line));
        }
    }

    /** Writes the queued lines; does nothing off the hook thread. */
    static void drain() {
        if (hookThread != null && Thread.currentThread() != hookThread) return;
        for (Line l; (l = QUEUE.poll()) != null; ) {
            QUEUED.decrementAndGet();
            printNow(l.print(), l.level(), l.text());
        }
        long dropped = DROPPED.getAndSet(0);
        if (dropped > 0 && defaultPrint != null) {
            printNow(defaultPrint, LogLevel.WARN.id, "Warn  (criu-java-gpu): " + dropped
                    + " log lines of worker threads dropped: more than " + MAX_QUEUED + " waited for criu's main thread\n");
        }
    }

    /** {@code text}, or its first bytes and a marker, at most {@link #MAX_LINE_BYTES} bytes of UTF-8 with a newline. */
    static String cap(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        if (b.length < MAX_LINE_BYTES) return text;
        int keep = MAX_LINE_BYTES - 1 - String.format(CUT, b.length).length();
        while (keep > 0 && (b[keep] & 0xc0) == 0x80) keep--; // not inside a UTF-8 sequence
        return new String(b, 0, keep, StandardCharsets.UTF_8) + String.format(CUT, b.length - keep);
    }

    private static void systemLog(String line) {
        try {
            libc_h.syslog(libc_h.LOG_DAEMON_ERR, line);
        } catch (RuntimeException e) {
            // criu's log has the line; the system log is a copy
        }
    }

    private static void printNow(Printer print, int level, String line) {
        try {
            print.print(level, line);
        } catch (RuntimeException e) {
            STDERR.print(line);
        }
    }

    /** A stream whose every line becomes a line of criu's log (the JVM's System.out and System.err). */
    private static PrintStream stream(LogLevel level) {
        return new PrintStream(new OutputStream() {
            private final StringBuilder pending = new StringBuilder();
            private final byte[] one = new byte[1];

            @Override
            public synchronized void write(int b) {
                one[0] = (byte) b;
                write(one, 0, 1);
            }

            @Override
            public synchronized void write(byte[] b, int off, int len) {
                String s = new String(b, off, len, StandardCharsets.UTF_8);
                for (int i = 0; i < s.length(); i++) {
                    char c = s.charAt(i);
                    if (c == '\n' || pending.length() >= MAX_LINE_BYTES) flushLine();
                    if (c != '\n') pending.append(c);
                }
            }

            private void flushLine() {
                LogSink.write(defaultPrint, level, LogLines.line("criu-java-gpu", level, pending.toString()));
                pending.setLength(0);
            }
        }, true, StandardCharsets.UTF_8);
    }
}

package dev.criugpu.it;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Polls for a condition until a deadline: waiting for an observable state, never for a fixed time. */
public final class Eventually {
    private static final Duration POLL = Duration.ofMillis(20);

    private Eventually() {
    }

    public static void await(String what, Duration timeout, BooleanSupplier condition) {
        await(what, timeout, condition, () -> "");
    }

    /** Waits until {@code condition} holds; on timeout fails with {@code what} and the given diagnostics. */
    public static void await(String what, Duration timeout, BooleanSupplier condition, Supplier<String> diagnostics) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what
                        + diagnosticsSuffix(diagnostics.get()));
            }
            try {
                Thread.sleep(POLL);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for " + what, e);
            }
        }
    }

    private static String diagnosticsSuffix(String d) {
        return d == null || d.isEmpty() ? "" : "\n" + d;
    }
}

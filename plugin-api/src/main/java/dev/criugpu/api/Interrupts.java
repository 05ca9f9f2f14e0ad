package dev.criugpu.api;

import dev.criugpu.api.bindings.signal_h;

import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * DESIGN rule 4, the interruptible half: while a hook runs, the shim blocks SIGHUP, SIGINT, SIGQUIT and SIGTERM on
 * criu's main thread (every JVM thread blocks them for good), so a signal sent to stop criu stays pending until the
 * hook returns. A hook that waits long therefore waits here, in short slices, and gives up as soon as such a signal is
 * pending and criu does not ignore it; once the hook has returned, criu takes the signal (their default action ends
 * it). Work already handed to other threads goes on until the process ends.
 */
public final class Interrupts {
    /** How often a wait looks for a pending stop signal. */
    static final long SLICE_MS = 20;
    private static final int[] STOP_SIGNALS = {signal_h.SIGINT, signal_h.SIGTERM, signal_h.SIGHUP, signal_h.SIGQUIT};

    private Interrupts() {
    }

    /** The first stop signal pending for this thread or process that criu does not ignore. */
    public static Optional<String> pendingStop() {
        long pending = signal_h.pendingMask();
        if (pending == 0) return Optional.empty();
        for (int sig : STOP_SIGNALS) {
            if ((pending & (1L << (sig - 1))) != 0 && signal_h.handler(sig) != signal_h.SIG_IGN) {
                return Optional.of(name(sig));
            }
        }
        return Optional.empty();
    }

    static String name(int sig) {
        return switch (sig) {
            case signal_h.SIGINT -> "SIGINT";
            case signal_h.SIGTERM -> "SIGTERM";
            case signal_h.SIGHUP -> "SIGHUP";
            case signal_h.SIGQUIT -> "SIGQUIT";
            default -> "signal " + sig;
        };
    }

    /** Throws when a stop signal is pending: {@code what} names what the hook stops waiting for. */
    public static void check(String what) {
        pendingStop().ifPresent(sig -> {
            throw new CriuException(Errno.EINTR, "criu received " + sig + " while waiting for " + what
                    + "; stopped waiting so that criu can end");
        });
    }

    /**
     * {@code future.get()}, given up with a {@link CriuException} (EINTR) when a stop signal arrives meanwhile.
     *
     * @throws ExecutionException as {@link Future#get()} does
     */
    public static <T> T await(Future<T> future, String what) throws ExecutionException {
        try {
            return await(future, what, Long.MAX_VALUE);
        } catch (TimeoutException e) {
            throw new IllegalStateException("an unbounded wait timed out", e);
        }
    }

    /** As {@link #await(Future, String)}, giving up after {@code timeoutMs} too. */
    public static <T> T await(Future<T> future, String what, long timeoutMs) throws ExecutionException, TimeoutException {
        long deadline = timeoutMs == Long.MAX_VALUE ? Long.MAX_VALUE : System.nanoTime() + timeoutMs * 1_000_000;
        while (true) {
            try {
                return future.get(SLICE_MS, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                check(what);
                if (System.nanoTime() - deadline > 0 && deadline != Long.MAX_VALUE) throw e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CriuException(Errno.EINTR, "interrupted while waiting for " + what);
            }
        }
    }
}

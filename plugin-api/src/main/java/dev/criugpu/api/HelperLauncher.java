package dev.criugpu.api;

import dev.criugpu.api.bindings.Downcall;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The one launcher of a helper process, {@code criu_gpu_launch_helper} (native/launch/helper_launch.h): the shim starts
 * the early helper with it before criu's JVM exists, and {@link HelperProcess#start} every later one through the
 * address the shim hands over in its services struct. Tests outside criu load the same C file built alone
 * ({@code make -C native helper-launcher}) and hand its address to {@link #use}.
 */
public final class HelperLauncher {
    /** The launcher's symbol in the library built alone. */
    public static final String SYMBOL = "criu_gpu_launch_helper";
    private static final FunctionDescriptor LAUNCH = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG);
    /** "SOCKET_FD OUTPUT_FD PID STATLINE": a /proc stat line is well under 1 KiB. */
    private static final int OUT_BYTES = 2048;
    private static final AtomicReference<HelperLauncher> IN_USE = new AtomicReference<>();

    private final Downcall launch;

    private HelperLauncher(MemorySegment function) {
        this.launch = new Downcall(function, LAUNCH);
    }

    /** From now on helpers start through the launcher at {@code function} (the shim's; in tests, the one built alone). */
    public static void use(MemorySegment function) {
        IN_USE.set(new HelperLauncher(function));
    }

    /** The launcher in use; an IOException where there is none (a JVM not started by the shim, and no test set one). */
    static HelperLauncher inUse() throws IOException {
        HelperLauncher l = IN_USE.get();
        if (l == null) throw new IOException("no helper launcher: a helper is started through the shim's (criu_gpu_launch_helper)");
        return l;
    }

    /** Starts {@code argv}; "SOCKET_FD OUTPUT_FD PID STATLINE", the two fds now the caller's; why it could not otherwise. */
    String launch(List<String> argv) throws IOException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment args = a.allocate(ADDRESS, argv.size() + 1L);
            for (int i = 0; i < argv.size(); i++) args.setAtIndex(ADDRESS, i, a.allocateFrom(argv.get(i)));
            args.setAtIndex(ADDRESS, argv.size(), MemorySegment.NULL);
            MemorySegment out = a.allocate(OUT_BYTES);
            int rc = (int) launch.handle().invokeExact(args, out, (long) OUT_BYTES);
            String said = out.getString(0);
            if (rc != 0) throw new IOException(said);
            return said;
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(SYMBOL, t);
        }
    }
}

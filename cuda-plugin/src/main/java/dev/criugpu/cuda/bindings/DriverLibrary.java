package dev.criugpu.cuda.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An NVIDIA user-space library opened by soname (the loader path, as the driver installs it) with its symbols bound
 * on first use: an absent library or a symbol an older driver lacks is an answer ({@link #loadError()},
 * {@link #missing(String...)}), never a failure at class load. The library stays loaded for the life of the JVM.
 */
final class DriverLibrary {
    private static final Linker LINKER = Linker.nativeLinker();

    private final String soname;
    private final SymbolLookup lookup;
    private final String error;
    private final Map<String, MethodHandle> handles = new ConcurrentHashMap<>();

    DriverLibrary(String soname) {
        this.soname = soname;
        SymbolLookup found = null;
        String why = null;
        try {
            found = SymbolLookup.libraryLookup(soname, Arena.global());
        } catch (IllegalArgumentException e) {
            why = "cannot load " + soname + " (no NVIDIA driver user-space library in the loader path)";
        }
        this.lookup = found;
        this.error = why;
    }

    Optional<String> loadError() {
        return Optional.ofNullable(error);
    }

    boolean has(String symbol) {
        return lookup != null && lookup.find(symbol).isPresent();
    }

    Optional<String> missing(String... symbols) {
        for (String s : symbols) {
            if (!has(s)) return Optional.of(s);
        }
        return Optional.empty();
    }

    /** Calls {@code name}, which returns a C int (a status code). */
    int callInt(String name, FunctionDescriptor descriptor, Object... args) {
        return (int) call(name, descriptor, args);
    }

    /** Calls {@code name}, which returns a pointer. */
    MemorySegment callPointer(String name, FunctionDescriptor descriptor, Object... args) {
        return (MemorySegment) call(name, descriptor, args);
    }

    private Object call(String name, FunctionDescriptor descriptor, Object... args) {
        try {
            return handle(name, descriptor).invokeWithArguments(args);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(name + " failed: " + t, t);
        }
    }

    private MethodHandle handle(String name, FunctionDescriptor descriptor) {
        return handles.computeIfAbsent(name, n -> {
            if (lookup == null) throw new IllegalStateException(error);
            MemorySegment address = lookup.find(n).orElseThrow(() ->
                    new IllegalStateException(soname + " has no " + n + " (driver too old)"));
            return LINKER.downcallHandle(address, descriptor);
        });
    }
}

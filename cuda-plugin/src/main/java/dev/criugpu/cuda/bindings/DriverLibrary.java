package dev.criugpu.cuda.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * An NVIDIA user-space library opened by soname (the loader path, as the driver installs it): an absent library or
 * a symbol an older driver lacks is an answer ({@link #loadError()}, {@link #missing(String...)}), never a failure
 * at class load. The library stays loaded for the life of the JVM.
 */
final class DriverLibrary {
    private static final Linker LINKER = Linker.nativeLinker();

    private final String soname;
    private final SymbolLookup lookup;
    private final String error;

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

    /** A downcall handle for {@code name}; callers check {@link #missing(String...)} first. */
    MethodHandle downcall(String name, FunctionDescriptor descriptor) {
        if (lookup == null) throw new IllegalStateException(error);
        MemorySegment address = lookup.find(name).orElseThrow(() ->
                new IllegalStateException(soname + " has no " + name + " (driver too old)"));
        return LINKER.downcallHandle(address, descriptor);
    }
}

package dev.criugpu.api;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;

/** dlsym(RTLD_DEFAULT, name): finds symbols of the executable (criu exports its functions with -rdynamic). */
final class SymbolLookups {
    private static final MethodHandle DLSYM = Linker.nativeLinker().defaultLookup().find("dlsym")
            .map(a -> Linker.nativeLinker().downcallHandle(a, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS)))
            .orElse(null);

    private SymbolLookups() {
    }

    static Optional<MemorySegment> global(String name) {
        if (DLSYM == null) return Optional.empty();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = (MemorySegment) DLSYM.invokeExact(MemorySegment.NULL, arena.allocateFrom(name));
            return a.equals(MemorySegment.NULL) ? Optional.empty() : Optional.of(a);
        } catch (Throwable t) {
            return Optional.empty();
        }
    }
}

package dev.criugpu.api.bindings;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * A native function found now and linked on its first call. Linking a downcall spins a handful of classes, a few
 * milliseconds each in a JVM that has just started, and criu's JVM starts on the dump's critical path: of the
 * functions a binding offers, few are called before the first lock and many never in a given command. Two threads
 * may link it at once; each gets a working handle.
 */
public final class Downcall {
    private static final Linker LINKER = Linker.nativeLinker();

    private final MemorySegment address;
    private final FunctionDescriptor descriptor;
    private final Linker.Option[] options;
    private volatile MethodHandle handle;

    public Downcall(MemorySegment address, FunctionDescriptor descriptor, Linker.Option... options) {
        this.address = address;
        this.descriptor = descriptor;
        this.options = options.clone();
    }

    /** {@code name} in {@code lookup}; an {@link IllegalStateException} now if it has none. */
    public static Downcall find(SymbolLookup lookup, String name, FunctionDescriptor descriptor, Linker.Option... options) {
        MemorySegment a = lookup.find(name).orElseThrow(() -> new IllegalStateException("no symbol " + name));
        return new Downcall(a, descriptor, options);
    }

    /** The handle, linked on the first call. */
    public MethodHandle handle() {
        MethodHandle h = handle;
        if (h == null) handle = h = LINKER.downcallHandle(address, descriptor, options);
        return h;
    }
}

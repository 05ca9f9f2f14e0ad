package dev.criugpu.api.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A shared library that the bindings of either vendor call into (libcuda, libnvidia-ml, libdrm_amdgpu, a test's
 * stand-in), opened once and kept for the life of the JVM. The one way our bindings load a library: an absent library
 * or a symbol an older one lacks is an answer ({@link #loadError()}, {@link #missing(String...)}), never a failure
 * at class load, and a downcall to it fails with an {@link UnsatisfiedLinkError} that says which of the two it is.
 * Bindings open their library in a holder class, so that loading the binding class on a host without the library
 * is harmless. libc's functions come from the linker's default lookup instead (plugin-api {@code sys/}).
 */
public final class NativeLibrary {
    private static final Linker LINKER = Linker.nativeLinker();

    private final String name;
    private final String prefix;
    private final String whyMissing;
    private final SymbolLookup lookup;
    private final String error;

    private NativeLibrary(String name, String prefix, String whyAbsent, String whyMissing) {
        this.name = name;
        this.prefix = prefix;
        this.whyMissing = whyMissing;
        SymbolLookup found = null;
        String why = null;
        try {
            // a name with a slash is a file (a test's stand-in); any other, a soname the dynamic loader finds
            found = name.indexOf('/') >= 0 ? SymbolLookup.libraryLookup(Path.of(name), Arena.global())
                    : SymbolLookup.libraryLookup(name, Arena.global());
        } catch (IllegalArgumentException e) {
            why = "cannot load " + name + (whyAbsent == null ? "" : " (" + whyAbsent + ")");
        }
        this.lookup = found;
        this.error = why;
    }

    /**
     * Opens {@code name} now.
     *
     * @param name a soname (the loader path, as the vendor installs it) or, holding a slash, a file
     * @param whyAbsent what an absent library means to the user (said in {@link #loadError()}), or null
     * @param whyMissing what a missing symbol means ("driver too old"), or null
     */
    public static NativeLibrary open(String name, String whyAbsent, String whyMissing) {
        return open(name, "", whyAbsent, whyMissing);
    }

    /** The same with {@code prefix} before every symbol name (a simulator's {@code kfdsim_amdgpu_...}). */
    public static NativeLibrary open(String name, String prefix, String whyAbsent, String whyMissing) {
        return new NativeLibrary(name, prefix, whyAbsent, whyMissing);
    }

    /** The name it was opened by. */
    public String name() {
        return name;
    }

    /** Why the library cannot be used at all, or empty when it loaded. */
    public Optional<String> loadError() {
        return Optional.ofNullable(error);
    }

    public boolean available() {
        return lookup != null;
    }

    /** The address of {@code symbol} (the prefix put before it), if the library loaded and exports it. */
    public Optional<MemorySegment> find(String symbol) {
        return lookup == null ? Optional.empty() : lookup.find(prefix + symbol);
    }

    /** True when the library loaded and exports {@code symbol}. */
    public boolean has(String symbol) {
        return find(symbol).isPresent();
    }

    /** The first of {@code symbols} that the library lacks (every one where it did not load), or empty when all are there. */
    public Optional<String> missing(String... symbols) {
        for (String s : symbols) {
            if (!has(s)) return Optional.of(s);
        }
        return Optional.empty();
    }

    /** The address of {@code symbol}; an {@link UnsatisfiedLinkError} that says why where there is none. */
    public MemorySegment address(String symbol) {
        return find(symbol).orElseThrow(() -> new UnsatisfiedLinkError(error != null ? error + ", needed for " + symbol
                : name + " has no " + prefix + symbol + (whyMissing == null ? "" : " (" + whyMissing + ")")));
    }

    /** A downcall handle for {@code symbol}, linked now; callers that can do without it check {@link #missing} first. */
    public MethodHandle downcall(String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
        return LINKER.downcallHandle(address(symbol), descriptor, options);
    }

    @Override
    public String toString() {
        return name;
    }
}

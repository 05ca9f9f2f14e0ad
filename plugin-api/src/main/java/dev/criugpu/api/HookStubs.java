package dev.criugpu.api;

import dev.criugpu.api.bindings.stat;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.MutableCallSite;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * How criu's hooks enter Java: their C signatures ({@link #descriptor}), the dispatcher method each one calls with
 * criu's arguments adapted ({@link #upcallTarget}), and a plugin's upcall stubs, made before its {@link HookDispatcher}
 * exists: each enters Java through a call site that {@link #install} points at the dispatcher. Making them spins
 * classes for every hook signature (12-27 ms on criu's main thread, measured with the AOT cache on 2 cores), so
 * {@link Bootstrap#prepare} makes them on a thread of its own while the plugin's init runs, where there are CPUs to
 * spare for it.
 */
final class HookStubs {
    static final FunctionDescriptor EXIT_DESCRIPTOR = FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT);
    private static final MethodHandle DEVICE_FILE;
    private static final MethodHandle CALL;

    static {
        try {
            DEVICE_FILE = MethodHandles.lookup().findStatic(HookStubs.class, "deviceFile",
                    MethodType.methodType(DeviceFile.class, MemorySegment.class));
            CALL = MethodHandles.lookup().findVirtual(HookDispatcher.class, "call",
                    MethodType.methodType(int.class, Hook.class, MethodHandle.class, Object[].class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The hook's C signature (criu-plugin.h), from its C parameters: pointers are addresses, 64-bit integers longs. */
    static FunctionDescriptor descriptor(Hook hook) {
        List<MemoryLayout> params = new ArrayList<>();
        for (String[] p : hook.parameters()) {
            String type = p[0];
            if (type.endsWith("*")) params.add(ADDRESS);
            else if (type.equals("int") || type.equals("unsigned int") || type.equals("bool")) params.add(JAVA_INT);
            else if (type.matches("u?int64_t|(unsigned )?long")) params.add(JAVA_LONG);
            else throw new IllegalStateException(hook + ": no layout for the C type " + type);
        }
        return FunctionDescriptor.of(JAVA_INT, params.toArray(MemoryLayout[]::new));
    }

    /** The {@code struct stat *} criu passes HANDLE_DEVICE_VMA. */
    static DeviceFile deviceFile(MemorySegment st) {
        MemorySegment s = stat.reinterpret(st);
        return new DeviceFile(stat.st_dev(s), stat.st_ino(s), stat.st_mode(s), stat.st_rdev(s));
    }

    /**
     * The upcall's Java end for a main-process hook: the plugin's method of the hook's name, its {@code struct stat *}
     * arguments made {@link DeviceFile}s, called through {@link HookDispatcher#call} with criu's C arguments.
     */
    static MethodHandle upcallTarget(HookDispatcher dispatcher, Hook hook) {
        MethodType c = descriptor(hook).toMethodType();
        List<String[]> params = hook.parameters();
        MethodType java = c;
        for (int i = 0; i < params.size(); i++) {
            if (params.get(i)[0].equals("const struct stat *")) java = java.changeParameterType(i, DeviceFile.class);
        }
        MethodHandle plugin;
        try {
            plugin = MethodHandles.publicLookup().findVirtual(CriuPlugin.class, hook.javaMethod, java).bindTo(dispatcher.plugin());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no method CriuPlugin." + hook.javaMethod + java + " for " + hook, e);
        }
        for (int i = 0; i < params.size(); i++) {
            if (java.parameterType(i) == DeviceFile.class) plugin = MethodHandles.filterArguments(plugin, i, DEVICE_FILE);
        }
        MethodHandle spread = plugin.asSpreader(Object[].class, params.size());
        return MethodHandles.insertArguments(CALL, 0, dispatcher, hook, spread)
                .asCollector(Object[].class, params.size()).asType(c);
    }

    /**
     * Fewer CPUs and that thread only competes with init for them: on 2 cores init took 15 ms longer and the whole
     * forced dump 3 ms (spine-bench, 15 rounds); on the H100's 16, the span from init to criu's first hook went from
     * 25-29 ms to 10 ms together with the trained CUDA dump init.
     */
    static final int MIN_CPUS_AHEAD = 4;
    /** {@link #MIN_CPUS_AHEAD}; 0 in tests of the early path on any machine. */
    static int minCpusAhead = MIN_CPUS_AHEAD;

    /** Whether {@link Bootstrap#prepare} makes them ahead, on a thread of their own. */
    static boolean ahead() {
        return Runtime.getRuntime().availableProcessors() >= minCpusAhead;
    }

    private final Map<Hook, MutableCallSite> sites = new EnumMap<>(Hook.class);
    private final Map<Hook, MemorySegment> stubs = new EnumMap<>(Hook.class);
    private final MutableCallSite exitSite = new MutableCallSite(EXIT_DESCRIPTOR.toMethodType());
    private final MemorySegment exitStub;

    private HookStubs(Set<Hook> hooks) {
        Linker linker = Linker.nativeLinker();
        Arena forever = Arena.global();
        for (Hook hook : hooks) {
            if (hook.context != Hook.Context.MAIN) continue;
            MutableCallSite site = new MutableCallSite(descriptor(hook).toMethodType());
            sites.put(hook, site);
            stubs.put(hook, linker.upcallStub(site.dynamicInvoker(), descriptor(hook), forever));
        }
        exitStub = linker.upcallStub(exitSite.dynamicInvoker(), EXIT_DESCRIPTOR, forever);
    }

    /** Stubs for the main-process hooks of {@code hooks} and the exit slot; none may be called before {@link #install}. */
    static HookStubs make(Set<Hook> hooks) {
        return new HookStubs(hooks);
    }

    /**
     * Points the stubs at {@code dispatcher}, then writes those of the hooks the running criu knows, and the exit slot,
     * into the shim's table: a stub is in the table only once its call site has a target.
     */
    void install(HookDispatcher dispatcher, MemorySegment table, int criuHookCount) {
        sites.forEach((hook, site) -> site.setTarget(upcallTarget(dispatcher, hook)));
        exitSite.setTarget(exitTarget(dispatcher));
        List<MutableCallSite> all = new ArrayList<>(sites.values());
        all.add(exitSite);
        MutableCallSite.syncAll(all.toArray(MutableCallSite[]::new));
        stubs.forEach((hook, stub) -> {
            if (criuHookCount <= 0 || hook.knownTo(criuHookCount)) table.setAtIndex(ADDRESS, hook.id, stub);
        });
        table.setAtIndex(ADDRESS, Hook.EXIT_SLOT, exitStub);
    }

    /** The dispatcher's exit, criu's exit hook. */
    static MethodHandle exitTarget(HookDispatcher dispatcher) {
        return bind(dispatcher, "exit", EXIT_DESCRIPTOR.toMethodType());
    }

    private static MethodHandle bind(HookDispatcher dispatcher, String method, MethodType type) {
        try {
            return MethodHandles.lookup().findVirtual(HookDispatcher.class, method, type).bindTo(dispatcher);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no dispatcher method " + method + type, e);
        }
    }
}

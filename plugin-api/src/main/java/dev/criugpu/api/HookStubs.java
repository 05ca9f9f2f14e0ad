package dev.criugpu.api;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MutableCallSite;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * A plugin's upcall stubs, made before its {@link HookDispatcher} exists: each enters Java through a call site that
 * {@link #install} points at the dispatcher. Making them spins classes for every hook signature (12-27 ms on criu's
 * main thread, measured with the AOT cache on 2 cores), so {@link Bootstrap#prepare} makes them on a thread of its own
 * while the plugin's init runs, where there are CPUs to spare for it.
 */
final class HookStubs {
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
    private final MutableCallSite exitSite = new MutableCallSite(Bootstrap.EXIT_DESCRIPTOR.toMethodType());
    private final MemorySegment exitStub;

    private HookStubs(Set<Hook> hooks) {
        Linker linker = Linker.nativeLinker();
        Arena forever = Arena.global();
        for (Hook hook : hooks) {
            if (hook.context != Hook.Context.MAIN) continue;
            MutableCallSite site = new MutableCallSite(Bootstrap.descriptor(hook).toMethodType());
            sites.put(hook, site);
            stubs.put(hook, linker.upcallStub(site.dynamicInvoker(), Bootstrap.descriptor(hook), forever));
        }
        exitStub = linker.upcallStub(exitSite.dynamicInvoker(), Bootstrap.EXIT_DESCRIPTOR, forever);
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
        sites.forEach((hook, site) -> site.setTarget(Bootstrap.upcallTarget(dispatcher, hook)));
        exitSite.setTarget(Bootstrap.exitTarget(dispatcher));
        java.util.List<MutableCallSite> all = new java.util.ArrayList<>(sites.values());
        all.add(exitSite);
        MutableCallSite.syncAll(all.toArray(MutableCallSite[]::new));
        stubs.forEach((hook, stub) -> {
            if (criuHookCount <= 0 || hook.knownTo(criuHookCount)) table.setAtIndex(ADDRESS, hook.id, stub);
        });
        table.setAtIndex(ADDRESS, Hook.EXIT_SLOT, exitStub);
    }
}

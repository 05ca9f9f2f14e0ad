package dev.criugpu.amdgpu.testing;

import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.api.sys.PlanCalls;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;

/**
 * The shim's plan executor (native/plan/gpu_plan.c, built alone as libcriugpu_plan.so by native/'s Makefile) over the
 * simulated KFD's calls: the entry points the shim calls in a restored task, and the context it passes them.
 */
public record SimulatedExecutor(MemorySegment restoreExtFile, MemorySegment updateVmaMap, MemorySegment context) {
    private static final SymbolLookup LIB =
            SymbolLookup.libraryLookup(NativeTestPrograms.path("libcriugpu_plan.so"), Arena.global());

    public static SimulatedExecutor load(ChildPlan plan) {
        return load(plan, SimulatedHost.CALLS);
    }

    public static SimulatedExecutor load(ChildPlan plan, PlanCalls calls) {
        return new SimulatedExecutor(LIB.find("gpu_plan_restore_ext_file").orElseThrow(),
                LIB.find("gpu_plan_update_vma_map").orElseThrow(), plan.sealed().context(calls));
    }
}

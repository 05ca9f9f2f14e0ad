package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.bindings.gpu_plan_child;
import dev.criugpu.amdgpu.bindings.gpu_plan_seam;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Hands the shim the native half of the restore: loads the plan executor ({@code libcriugpu_plan.so}) in criu's main process,
 * builds its call table and context (plan + table) in native memory, and registers the two child-hook entry
 * points, all before criu forks. The restored tasks inherit all of it; nothing here may be freed before the
 * restore ends.
 */
public final class ChildExecutor implements AutoCloseable {
    private final Arena arena;
    private final MemorySegment restoreExtFile;
    private final MemorySegment updateVmaMap;
    private final MemorySegment ctx;

    /** The functions the executor calls (struct gpu_plan_seam): libc and criu in production. */
    public record Calls(MemorySegment open, MemorySegment close, MemorySegment ioctl, MemorySegment findUnusedFd,
                        MemorySegment log, MemorySegment fdstoreGet) {
        public static Calls criu(CriuServices services) {
            SymbolLookup libc = Linker.nativeLinker().defaultLookup();
            return new Calls(libc.find("open").orElseThrow(), libc.find("close").orElseThrow(),
                    libc.find("ioctl").orElseThrow(),
                    services.criuFunction("find_unused_fd_pid").orElse(MemorySegment.NULL),
                    services.criuFunction("print_on_level").orElse(MemorySegment.NULL),
                    services.criuFunction("fdstore_get").orElse(MemorySegment.NULL));
        }
    }

    private ChildExecutor(Arena arena, MemorySegment restoreExtFile, MemorySegment updateVmaMap, MemorySegment ctx) {
        this.arena = arena;
        this.restoreExtFile = restoreExtFile;
        this.updateVmaMap = updateVmaMap;
        this.ctx = ctx;
    }

    public static ChildExecutor load(Path library, Calls calls, RestorePlan plan) {
        if (calls.findUnusedFd().equals(MemorySegment.NULL) || calls.log().equals(MemorySegment.NULL)
                || calls.fdstoreGet().equals(MemorySegment.NULL)) {
            throw new CriuException(Errno.ENOTSUP, "this criu exports no find_unused_fd_pid/print_on_level/fdstore_get"
                    + " (criu 4.2 or newer is needed to restore AMD GPU state)");
        }
        if (!Files.isRegularFile(library)) {
            throw new CriuException(Errno.ENOENT, library + ": the AMD restore library is missing (broken install)");
        }
        Arena arena = Arena.ofShared();
        try {
            // Never unloaded: the shim keeps the entry points for the rest of this criu process.
            SymbolLookup lib = SymbolLookup.libraryLookup(library, Arena.global());
            MemorySegment seam = gpu_plan_seam.allocate(arena);
            gpu_plan_seam.open(seam, calls.open());
            gpu_plan_seam.close(seam, calls.close());
            gpu_plan_seam.ioctl(seam, calls.ioctl());
            gpu_plan_seam.find_unused_fd(seam, calls.findUnusedFd());
            gpu_plan_seam.log(seam, calls.log());
            gpu_plan_seam.fdstore_get(seam, calls.fdstoreGet());
            MemorySegment ctx = gpu_plan_child.allocate(arena);
            gpu_plan_child.plan(ctx, plan.address());
            gpu_plan_child.seam(ctx, seam);
            return new ChildExecutor(arena, symbol(lib, library, "gpu_plan_restore_ext_file"),
                    symbol(lib, library, "gpu_plan_update_vma_map"), ctx);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    private static MemorySegment symbol(SymbolLookup lib, Path library, String name) {
        return lib.find(name).orElseThrow(() -> new CriuException(Errno.ENOENT, library + " lacks " + name));
    }

    /** Registers the entry points with the shim; fails when the shim cannot take them. */
    public void register(CriuServices services) {
        if (!services.setChildExecutor(ctx, restoreExtFile, updateVmaMap)) {
            throw new CriuException(Errno.ENOTSUP, "the shim cannot run the AMD restore in criu's children"
                    + " (plugin and Java parts from different builds?)");
        }
    }

    public MemorySegment context() {
        return ctx;
    }

    public MemorySegment restoreExtFile() {
        return restoreExtFile;
    }

    public MemorySegment updateVmaMap() {
        return updateVmaMap;
    }

    @Override
    public void close() {
        arena.close();
    }
}

package dev.criugpu.api;

import dev.criugpu.api.bindings.criu_gpu_services;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The training run for the JVM's AOT cache (native/make-aot.sh): bootstraps every plugin the way the shim does,
 * outside criu, so the classes a real start needs are loaded and linked ahead of time.
 */
public final class Training {
    private Training() {
    }

    /** Stands in for criu's log_get_loglevel: only MSG-level lines, so training is quiet. */
    static int quiet() {
        return LogLevel.MSG.id;
    }

    public static void main(String[] args) throws Exception {
        Linker linker = Linker.nativeLinker();
        Arena arena = Arena.global();
        MemorySegment logLevel = linker.upcallStub(
                MethodHandles.lookup().findStatic(Training.class, "quiet", MethodType.methodType(int.class)),
                FunctionDescriptor.of(JAVA_INT), arena);
        for (CriuPlugin plugin : Plugins.all()) {
            MemorySegment s = arena.allocate(criu_gpu_services.layout());
            criu_gpu_services.size(s, (int) criu_gpu_services.layout().byteSize());
            criu_gpu_services.stage(s, Stage.DUMP.id);
            criu_gpu_services.inventory_claim(s, InventoryClaim.NONE.ordinal());
            criu_gpu_services.hook_mask(s, Hook.mask(plugin.hooks()));
            criu_gpu_services.set(s, "plugin_name", arena.allocateFrom(plugin.name()));
            criu_gpu_services.set(s, "plugin_dir", arena.allocateFrom(args.length > 0 ? args[0] : "."));
            criu_gpu_services.set(s, "hook_table", arena.allocate(ADDRESS, Hook.TABLE_SLOTS));
            criu_gpu_services.set(s, "log_get_loglevel", logLevel);
            int rc = Bootstrap.start(s.address());
            System.out.println("training: " + plugin.name() + " bootstrap returned " + rc);
        }
    }
}

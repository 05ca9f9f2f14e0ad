package dev.criugpu.api;

import dev.criugpu.api.bindings.criu_gpu_services;
import dev.criugpu.api.sys.Syscalls;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The training run for the JVM's AOT cache (native/make-aot.sh): bootstraps every plugin the way the shim does,
 * outside criu, with an images directory for the dump as for the restore, and ends each with criu's exit hook, so the
 * classes a real start and end need are loaded and linked ahead of time (the CUDA dump's init and exit included: they
 * run on criu's main thread before its first lock and after its last page).
 */
public final class Training {
    private Training() {
    }

    /** Stands in for criu's log_get_loglevel: only MSG-level lines, so training is quiet. */
    static int quiet() {
        return LogLevel.MSG.id;
    }

    /** Stands in for criu's print_on_level(level, "%s", line); drops the line (LogSink has taken System.out). */
    static void print(int level, MemorySegment format, MemorySegment line) {
    }

    /** Stands in for criu's set_compel_interrupt_only_mode. */
    static void interruptOnly() {
    }

    /** Stands in for criu_get_image_dir. */
    private static int imageDirFd = -1;

    static int imageDir() {
        return imageDirFd;
    }

    public static void main(String[] args) throws Throwable {
        java.io.PrintStream out = System.out; // the bootstraps give System.out to criu's (here: dropped) log
        Linker linker = Linker.nativeLinker();
        Arena arena = Arena.global();
        MemorySegment logLevel = linker.upcallStub(
                MethodHandles.lookup().findStatic(Training.class, "quiet", MethodType.methodType(int.class)),
                FunctionDescriptor.of(JAVA_INT), arena);
        MemorySegment imageDir = linker.upcallStub(
                MethodHandles.lookup().findStatic(Training.class, "imageDir", MethodType.methodType(int.class)),
                FunctionDescriptor.of(JAVA_INT), arena);
        MemorySegment print = linker.upcallStub(MethodHandles.lookup().findStatic(Training.class, "print",
                MethodType.methodType(void.class, int.class, MemorySegment.class, MemorySegment.class)),
                FunctionDescriptor.ofVoid(JAVA_INT, ADDRESS, ADDRESS), arena);
        MemorySegment interruptOnly = linker.upcallStub(MethodHandles.lookup().findStatic(Training.class,
                "interruptOnly", MethodType.methodType(void.class)), FunctionDescriptor.ofVoid(), arena);
        // the path of a host with CPUs to spare, whatever this one has: its classes are the ones to load ahead
        HookStubs.minCpusAhead = 0;
        Path images = Files.createTempDirectory("criu-gpu-training");
        try {
            // A one-task pstree.img, so a restore bootstrap reads an image as it does inside criu.
            Files.write(images.resolve("pstree.img"), MINIMAL_PSTREE);
            imageDirFd = Syscalls.libc().open(images.toString(), Syscalls.O_RDONLY);
            // a dump, a restore's probe (checkRestore), a restore's init in criu
            for (int run = 0; run < 3; run++) {
                Stage stage = run == 0 ? Stage.DUMP : Stage.RESTORE;
                for (CriuPlugin plugin : Plugins.all()) {
                    MemorySegment s = arena.allocate(criu_gpu_services.layout());
                    criu_gpu_services.size(s, (int) criu_gpu_services.layout().byteSize());
                    criu_gpu_services.stage(s, stage.id);
                    if (run == 1) criu_gpu_services.flags(s, criu_gpu_services.FLAG_RESTORE_CHECK);
                    criu_gpu_services.inventory_claim(s, (stage == Stage.RESTORE ? InventoryClaim.NOT_LISTED
                            : InventoryClaim.NONE).ordinal());
                    criu_gpu_services.hook_mask(s, Hook.mask(plugin.hooks()));
                    criu_gpu_services.set(s, "plugin_name", arena.allocateFrom(plugin.name()));
                    criu_gpu_services.set(s, "plugin_dir", arena.allocateFrom(args.length > 0 ? args[0] : "."));
                    criu_gpu_services.set(s, "log_get_loglevel", logLevel);
                    criu_gpu_services.set(s, "print_on_level", print);
                    criu_gpu_services.set(s, "set_compel_interrupt_only_mode", interruptOnly);
                    MemorySegment table = arena.allocate(ADDRESS, Hook.TABLE_SLOTS);
                    criu_gpu_services.set(s, "hook_table", table);
                    criu_gpu_services.set(s, "criu_get_image_dir", imageDir);
                    Bootstrap.prepare(plugin.name(), stage.id, args.length > 0 ? args[0] : ".",
                            "/proc/self/fd/" + imageDirFd, null);
                    int rc = Bootstrap.start(s.address());
                    out.println("training: " + plugin.name() + " " + stage + (run == 1 ? " probe" : "")
                            + " bootstrap returned " + rc);
                    // the warm-up thread nobody waits for may not be through when the cache is written: made here too
                    plugin.warmUp(stage);
                    MemorySegment exit = table.getAtIndex(ADDRESS, Hook.EXIT_SLOT);
                    if (rc == 0 && !exit.equals(MemorySegment.NULL)) {
                        linker.downcallHandle(exit, HookStubs.EXIT_DESCRIPTOR).invokeExact(stage.id, 0);
                    }
                }
            }
        } finally {
            removeAll(images);
        }
    }

    /** The images directory and what the dumps wrote there (their agents' logs). */
    private static void removeAll(Path dir) throws java.io.IOException {
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) Files.deleteIfExists(f);
        }
        Files.deleteIfExists(dir);
    }

    /** criu's image framing: common magic, pstree magic, then one entry {pid 1, ppid 0, pgid 1, sid 1}. */
    private static final byte[] MINIMAL_PSTREE = {
            0x19, 0x43, 0x56, 0x54, 0x30, 0x30, 0x27, 0x50,
            8, 0, 0, 0, 0x08, 0x01, 0x10, 0x00, 0x18, 0x01, 0x20, 0x01};
}

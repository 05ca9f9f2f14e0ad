package dev.criugpu.api;

import dev.criugpu.api.bindings.Downcall;
import dev.criugpu.api.bindings.criu_gpu_services;
import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.api.plan.Fdstore;
import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.sys.PlanCalls;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.nio.file.Path;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/** {@link CriuServices} inside criu: calls the functions criu exports, at the addresses the shim found. */
final class NativeCriuServices implements CriuServices {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final Optional<Downcall> DLSYM = LINKER.defaultLookup().find("dlsym")
            .map(a -> new Downcall(a, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS)));
    /** print_on_level(level, "%s", line): variadic from its second argument on. */
    private static final FunctionDescriptor PRINT = FunctionDescriptor.ofVoid(JAVA_INT, ADDRESS, ADDRESS);
    private static final Linker.Option PRINT_VARIADIC = Linker.Option.firstVariadicArg(2);
    /** log_get_loglevel and criu_get_image_dir. */
    private static final FunctionDescriptor INT_OF_NOTHING = FunctionDescriptor.of(JAVA_INT);
    /** add_inventory_plugin. */
    private static final FunctionDescriptor INT_OF_STRING = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    /** set_compel_interrupt_only_mode. */
    private static final FunctionDescriptor VOID_OF_NOTHING = FunctionDescriptor.ofVoid();

    private final MemorySegment struct;
    private final String pluginName;
    private final Stage stage;
    private final Path pluginDir;
    private final LogSink.Printer printOnLevel;
    private final Downcall criuGetImageDir;
    private final Downcall addInventoryPlugin;
    private final Downcall setInterruptOnly;
    private final int criuLogLevel;

    NativeCriuServices(MemorySegment struct) {
        this.struct = struct;
        this.pluginName = criu_gpu_services.plugin_name(struct).reinterpret(256).getString(0);
        this.stage = Stage.of(criu_gpu_services.stage(struct));
        this.pluginDir = Path.of(criu_gpu_services.plugin_dir(struct).reinterpret(4096).getString(0));
        this.printOnLevel = printer(handle(criu_gpu_services.print_on_level(struct), PRINT, PRINT_VARIADIC));
        this.criuGetImageDir = later(criu_gpu_services.criu_get_image_dir(struct), INT_OF_NOTHING);
        this.addInventoryPlugin = later(criu_gpu_services.add_inventory_plugin(struct), INT_OF_STRING);
        this.setInterruptOnly = later(criu_gpu_services.set_compel_interrupt_only_mode(struct), VOID_OF_NOTHING);
        MethodHandle getLevel = handle(criu_gpu_services.log_get_loglevel(struct), INT_OF_NOTHING);
        this.criuLogLevel = getLevel == null ? LogLevel.INFO.id : intOf(getLevel);
    }

    /**
     * What the constructor and a plugin's init do first with native memory, done on another thread while criu's
     * main thread is still on its way there (issue 23): the JVM links a call shape once and caches it, so the main
     * thread then finds the shapes linked, or waits for the link in progress. The first reads of the services
     * struct and the first C strings spin classes too. Calls nothing of criu's: print_on_level is not thread-safe.
     */
    static void warmUp() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment struct = arena.allocate(criu_gpu_services.layout());
            criu_gpu_services.set(struct, "plugin_name", arena.allocateFrom("warm-up"));
            criu_gpu_services.plugin_name(struct).reinterpret(256).getString(0);
            criu_gpu_services.stage(struct);
        }
        SymbolLookup libc = LINKER.defaultLookup();
        LINKER.downcallHandle(PRINT, PRINT_VARIADIC);
        LINKER.downcallHandle(VOID_OF_NOTHING);
        // harmless calls of the other shapes: getpid as log_get_loglevel, atoi as add_inventory_plugin (called at a
        // dump's first CUDA task), and an empty handle as print_on_level's call site
        MethodHandle getpid = LINKER.downcallHandle(libc.find("getpid").orElseThrow(), INT_OF_NOTHING);
        MethodHandle atoi = LINKER.downcallHandle(libc.find("atoi").orElseThrow(), INT_OF_STRING);
        try (Arena arena = Arena.ofConfined()) {
            MethodHandles.empty(PRINT.toMethodType()).invokeExact(0, MemorySegment.NULL, MemorySegment.NULL);
            int pid = (int) getpid.invokeExact();
            int zero = (int) atoi.invokeExact(arena.allocateFrom("0"));
        } catch (Throwable t) {
            throw new IllegalStateException("warm-up call failed", t);
        }
    }

    private static int intOf(MethodHandle intOfNothing) {
        try {
            return (int) intOfNothing.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("call into criu failed", t);
        }
    }

    private static MethodHandle handle(MemorySegment address, FunctionDescriptor fd, Linker.Option... options) {
        return address.equals(MemorySegment.NULL) ? null : LINKER.downcallHandle(address, fd, options);
    }

    /** What init does not call: linked on first use, off criu's start (issue 23). */
    private static Downcall later(MemorySegment address, FunctionDescriptor fd) {
        return address.equals(MemorySegment.NULL) ? null : new Downcall(address, fd);
    }

    private static LogSink.Printer printer(MethodHandle printOnLevel) {
        if (printOnLevel == null) return null;
        return (level, line) -> {
            try (Arena arena = Arena.ofConfined()) {
                printOnLevel.invokeExact(level, arena.allocateFrom("%s"), arena.allocateFrom(line));
            } catch (Throwable t) {
                throw new IllegalStateException("print_on_level", t);
            }
        };
    }

    @Override
    public String pluginName() {
        return pluginName;
    }

    @Override
    public Stage stage() {
        return stage;
    }

    @Override
    public boolean forced() {
        return (criu_gpu_services.flags(struct) & criu_gpu_services.FLAG_FORCED) != 0;
    }

    @Override
    public boolean restoreCheckOnly() {
        return (criu_gpu_services.flags(struct) & criu_gpu_services.FLAG_RESTORE_CHECK) != 0;
    }

    /** The shim shares its plan region only with the init it runs at POST_FORKING, after the probe said yes. */
    @Override
    public boolean afterRestoreProbe() {
        return stage == Stage.RESTORE && !restoreCheckOnly() && planRegion().isPresent();
    }

    /** Whether the shim's struct is recent enough to have {@code field} (a pointer or a 64-bit number). */
    private boolean holds(String field) {
        return holds(field, 8);
    }

    private boolean holds(String field, long bytes) {
        return Integer.toUnsignedLong(criu_gpu_services.size(struct)) >= criu_gpu_services.offsetOf(field) + bytes;
    }

    /** The shim's helper launcher ({@link HelperLauncher}); empty for a shim of an older build. */
    Optional<MemorySegment> helperLauncher() {
        if (!holds("launch_helper")) return Optional.empty();
        MemorySegment f = criu_gpu_services.launch_helper(struct);
        return f.equals(MemorySegment.NULL) ? Optional.empty() : Optional.of(f);
    }

    /** The shim's exit handler turns criu's 0 into {@code status} when criu's main returns (a dump's only). */
    @Override
    public boolean exitStatusAfterCleanup(int status) {
        if (status == 0 || !holds("exit_status", 4)
                || (criu_gpu_services.flags(struct) & criu_gpu_services.FLAG_EXIT_STATUS) == 0) {
            return false;
        }
        criu_gpu_services.exit_status(struct, status);
        return true;
    }

    /** The restore probe tells the shim where to park pids while criu's own JVM starts (a shim of this build or later). */
    @Override
    public boolean parkRestorePidsAfter(long lastPid) {
        if (!restoreCheckOnly() || !holds("park_last_pid")) return false;
        criu_gpu_services.park_last_pid(struct, lastPid);
        return true;
    }

    /** The memory the shim shares with criu's forked children, where it has any (a restore's JVM after the fork). */
    Optional<MemorySegment> planRegion() {
        if (!holds("plan_region_size")) return Optional.empty();
        MemorySegment region = criu_gpu_services.plan_region(struct);
        long size = criu_gpu_services.plan_region_size(struct);
        return region.equals(MemorySegment.NULL) || size <= 0 ? Optional.empty() : Optional.of(region.reinterpret(size));
    }

    @Override
    public int criuHookCount() {
        return criu_gpu_services.criu_hook_count(struct);
    }

    int hookMask() {
        return criu_gpu_services.hook_mask(struct);
    }

    MemorySegment hookTable() {
        return criu_gpu_services.hook_table(struct).reinterpret((long) Hook.TABLE_SLOTS * ADDRESS.byteSize());
    }

    @Override
    public Path pluginDir() {
        return pluginDir;
    }

    @Override
    public boolean isLoggable(LogLevel level) {
        return level.id <= criuLogLevel;
    }

    /** From any thread: {@link LogSink} has criu's main thread write it. */
    @Override
    public void log(LogLevel level, String message) {
        if (!isLoggable(level)) return;
        for (String line : LogLines.of(pluginName, level, message)) LogSink.write(printOnLevel, level, line);
    }

    /** criu's print_on_level, for {@link LogSink#bind}; null when the running criu exports none. */
    LogSink.Printer printOnLevel() {
        return printOnLevel;
    }

    @Override
    public Optional<Integer> imageDirFd() {
        if (criuGetImageDir == null) return Optional.empty();
        int fd = intOf(criuGetImageDir.handle());
        return fd < 0 ? Optional.empty() : Optional.of(fd);
    }

    /**
     * The path names the directory in messages and to other processes; the files the plugins create, rename and
     * remove there ({@link ImageFiles}) go through criu's fd, whatever the path comes to mean after criu opened it.
     */
    @Override
    public Optional<Path> imageDir() {
        return imageDirFd().map(NativeCriuServices::boundImageDir);
    }

    /** Where criu's images-dir fd leads now, with the files there reached through that fd from now on. */
    private static Path boundImageDir(int fd) {
        Path dir = realPath(Path.of(PROC_FD + fd));
        ImageFiles.useDirectoryFd(dir, fd);
        return dir;
    }

    private static final String PROC_FD = "/proc/self/fd/";

    /**
     * The images dir as the shim hands it to {@code Bootstrap.prepare}, criu's fd as {@code /proc/self/fd/N}: where it
     * leads, bound to that fd as {@link #imageDir} does, so that what prepare reads there goes through criu's fd too.
     */
    static Path imageDirOf(String procFdPath) {
        if (procFdPath.startsWith(PROC_FD)) {
            try {
                return boundImageDir(Integer.parseInt(procFdPath.substring(PROC_FD.length())));
            } catch (NumberFormatException e) {
                // not the shim's form: named as given
            }
        }
        return realPath(Path.of(procFdPath));
    }

    /** Where criu's images-dir fd ({@code /proc/self/fd/N}) leads, or the link itself if that cannot be read. */
    static Path realPath(Path fdLink) {
        try {
            return fdLink.toRealPath();
        } catch (java.io.IOException e) {
            return fdLink;
        }
    }

    @Override
    public boolean addInventoryPlugin() {
        if (addInventoryPlugin == null) return false;
        try (Arena arena = Arena.ofConfined()) {
            return (int) addInventoryPlugin.handle().invokeExact(arena.allocateFrom(pluginName)) == 0;
        } catch (Throwable t) {
            throw new IllegalStateException("add_inventory_plugin failed", t);
        }
    }

    @Override
    public InventoryClaim inventoryClaim() {
        return InventoryClaim.values()[criu_gpu_services.inventory_claim(struct)];
    }

    @Override
    public boolean setCompelInterruptOnlyMode() {
        if (setInterruptOnly == null) return false;
        try {
            setInterruptOnly.handle().invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("call into criu failed", t);
        }
        return true;
    }

    /**
     * A function the criu binary exports (dynamic symbols of the executable, which criu exports with -rdynamic):
     * dlsym(RTLD_DEFAULT, name).
     */
    private static Optional<MemorySegment> criuExport(String name) {
        if (DLSYM.isEmpty()) return Optional.empty();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = (MemorySegment) DLSYM.get().handle().invokeExact(MemorySegment.NULL, arena.allocateFrom(name));
            return a.equals(MemorySegment.NULL) ? Optional.empty() : Optional.of(a);
        } catch (Throwable t) {
            return Optional.empty();
        }
    }

    @Override
    public Optional<Fdstore> fdstore() {
        return criuExport("fdstore_add").map(a -> {
            MethodHandle add = LINKER.downcallHandle(a, FunctionDescriptor.of(JAVA_INT, JAVA_INT));
            return Fdstore.of(fd -> {
                try {
                    return (int) add.invokeExact(fd);
                } catch (Throwable t) {
                    throw new IllegalStateException("fdstore_add", t);
                }
            });
        });
    }

    /**
     * The shim reads {@code child_plan} in criu's forked children, which inherit it from this (main) process. A shim
     * built before the field existed has a smaller struct: writing it would overwrite its other state.
     */
    @Override
    public boolean setChildExecutor(ChildPlan plan) {
        if (!holds("child_plan")) {
            log(LogLevel.ERROR, "the shim's services struct has no child_plan field (mismatched build)");
            return false;
        }
        criu_gpu_services.child_plan(struct, plan.sealed().context(planCalls()));
        return true;
    }

    /** libc's and criu's functions, for the executor in criu's children. */
    private PlanCalls planCalls() {
        String missing = Stream.of("find_unused_fd_pid", "fdstore_get").filter(f -> criuExport(f).isEmpty())
                .collect(Collectors.joining(", "));
        if (printOnLevel == null || !missing.isEmpty()) {
            throw new CriuException(Errno.ENOTSUP, "this criu exports no " + (missing.isEmpty() ? "print_on_level"
                    : missing) + ": criu 4.2 or newer is needed to restore device files in the restored tasks");
        }
        SymbolLookup libc = LINKER.defaultLookup();
        return new PlanCalls(libc.find("open").orElseThrow(), libc.find("close").orElseThrow(),
                libc.find("ioctl").orElseThrow(), criuExport("find_unused_fd_pid").orElseThrow(),
                criu_gpu_services.print_on_level(struct), criuExport("fdstore_get").orElseThrow());
    }
}

package dev.criugpu.api;

import dev.criugpu.api.bindings.criu_gpu_services;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/** {@link CriuServices} inside criu: calls the functions criu exports, at the addresses the shim found. */
final class NativeCriuServices implements CriuServices {
    private static final Linker LINKER = Linker.nativeLinker();

    private final MemorySegment struct;
    private final String pluginName;
    private final Stage stage;
    private final Path pluginDir;
    private final MethodHandle printOnLevel;
    private final MethodHandle criuGetImageDir;
    private final MethodHandle addInventoryPlugin;
    private final MethodHandle setInterruptOnly;
    private final int criuLogLevel;

    NativeCriuServices(MemorySegment struct) {
        this.struct = struct;
        this.pluginName = criu_gpu_services.plugin_name(struct).reinterpret(256).getString(0);
        this.stage = Stage.of(criu_gpu_services.stage(struct));
        this.pluginDir = Path.of(criu_gpu_services.plugin_dir(struct).reinterpret(4096).getString(0));
        this.printOnLevel = handle(criu_gpu_services.print_on_level(struct),
                FunctionDescriptor.ofVoid(JAVA_INT, ADDRESS, ADDRESS), Linker.Option.firstVariadicArg(2));
        this.criuGetImageDir = handle(criu_gpu_services.criu_get_image_dir(struct), FunctionDescriptor.of(JAVA_INT));
        this.addInventoryPlugin = handle(criu_gpu_services.add_inventory_plugin(struct),
                FunctionDescriptor.of(JAVA_INT, ADDRESS));
        this.setInterruptOnly = handle(criu_gpu_services.set_compel_interrupt_only_mode(struct),
                FunctionDescriptor.ofVoid());
        MethodHandle getLevel = handle(criu_gpu_services.log_get_loglevel(struct), FunctionDescriptor.of(JAVA_INT));
        this.criuLogLevel = getLevel == null ? LogLevel.INFO.id : (int) invoke(getLevel);
    }

    private static MethodHandle handle(MemorySegment address, FunctionDescriptor fd, Linker.Option... options) {
        return address.equals(MemorySegment.NULL) ? null : LINKER.downcallHandle(address, fd, options);
    }

    private static Object invoke(MethodHandle mh, Object... args) {
        try {
            return mh.invokeWithArguments(args);
        } catch (Throwable t) {
            throw new IllegalStateException("call into criu failed", t);
        }
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

    @Override
    public void log(LogLevel level, String message) {
        if (!isLoggable(level)) return;
        String line = LogLines.format(pluginName, level, message);
        if (printOnLevel == null) {
            System.err.print(line);
            return;
        }
        synchronized (this) {
            try (Arena arena = Arena.ofConfined()) {
                printOnLevel.invokeExact(level.id, arena.allocateFrom("%s"), arena.allocateFrom(line));
            } catch (Throwable t) {
                System.err.print(line);
            }
        }
    }

    @Override
    public Optional<Integer> imageDirFd() {
        if (criuGetImageDir == null) return Optional.empty();
        int fd = (int) invoke(criuGetImageDir);
        return fd < 0 ? Optional.empty() : Optional.of(fd);
    }

    @Override
    public Optional<Path> imageDir() {
        return imageDirFd().map(fd -> {
            Path link = Path.of("/proc/self/fd/" + fd);
            try {
                return link.toRealPath();
            } catch (java.io.IOException e) {
                return link;
            }
        });
    }

    @Override
    public boolean addInventoryPlugin() {
        if (addInventoryPlugin == null) return false;
        try (Arena arena = Arena.ofConfined()) {
            return (int) addInventoryPlugin.invokeExact(arena.allocateFrom(pluginName)) == 0;
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
        invoke(setInterruptOnly);
        return true;
    }

    @Override
    public Optional<MemorySegment> criuFunction(String name) {
        if (name.equals("compel_wait_task")) {
            MemorySegment a = criu_gpu_services.compel_wait_task(struct);
            return a.equals(MemorySegment.NULL) ? Optional.empty() : Optional.of(a);
        }
        return Linker.nativeLinker().defaultLookup().find(name).or(() -> SymbolLookups.global(name));
    }

    /**
     * The shim reads these fields in criu's forked children, which inherit them from this (main) process. A shim
     * built before the fields existed has a smaller struct: writing them would overwrite its other state.
     */
    @Override
    public boolean setChildExecutor(MemorySegment ctx, MemorySegment restoreExtFile, MemorySegment updateVmaMap) {
        if (Integer.toUnsignedLong(criu_gpu_services.size(struct)) < criu_gpu_services.layout().byteSize()) {
            log(LogLevel.ERROR, "the shim's services struct has no child executor fields (mismatched build)");
            return false;
        }
        criu_gpu_services.child_ctx(struct, ctx);
        criu_gpu_services.child_restore_ext_file(struct, restoreExtFile);
        criu_gpu_services.child_update_vma_map(struct, updateVmaMap);
        return true;
    }
}

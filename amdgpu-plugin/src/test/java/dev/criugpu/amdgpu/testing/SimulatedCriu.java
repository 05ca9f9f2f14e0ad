package dev.criugpu.amdgpu.testing;

import dev.criugpu.api.CriuServices;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.LogLevel;
import dev.criugpu.api.Stage;
import dev.criugpu.api.log.CriuLog;
import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.inventory.ImageIO;
import dev.criugpu.inventory.images.PstreeEntry;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * What criu and the shim offer the plugin, for one command in a test: the images directory, the inventory
 * list, the log (lines kept for assertions; the plugin's slf4j loggers are routed here), and the shim's
 * child-hook slots, which the test then calls the way the shim does in a forked child.
 */
public final class SimulatedCriu implements CriuServices {
    private static final Linker LINKER = Linker.nativeLinker();

    private final Stage stage;
    private final Path images;
    private final InventoryClaim claim;
    private final List<String> inventory = Collections.synchronizedList(new ArrayList<>());
    private final List<String> lines = Collections.synchronizedList(new ArrayList<>());
    private SimulatedExecutor executor;
    private MethodHandle childRestoreExtFile;
    private MethodHandle childUpdateVmaMap;

    public SimulatedCriu(Stage stage, Path images, InventoryClaim claim) {
        this.stage = stage;
        this.images = images;
        this.claim = claim;
        CriuLog.register("dev.criugpu.amdgpu", this);
        if (stage == Stage.RESTORE) writeOneTaskPstree(images);
    }

    /** A pstree.img with one task, pid 1: the plugin checks its JVM's tids against it before criu forks. */
    private static void writeOneTaskPstree(Path images) {
        try {
            Files.createDirectories(images);
            ImageIO.writeEntries(images.resolve("pstree.img"), ImageIO.PSTREE_MAGIC,
                    List.of(PstreeEntry.newBuilder().setPid(1).setPpid(0).setPgid(1).setSid(1).build()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public List<String> inventory() {
        return List.copyOf(inventory);
    }

    public List<String> lines() {
        return List.copyOf(lines);
    }

    /** The log lines at {@code level}. */
    public List<String> lines(LogLevel level) {
        String tag = "[" + level + "] ";
        return lines().stream().filter(l -> l.startsWith(tag)).map(l -> l.substring(tag.length())).toList();
    }

    /** RESTORE_EXT_FILE as the shim calls it in a restored task. */
    public int childRestoreExtFile(int id) throws Throwable {
        return (int) childRestoreExtFile.invokeExact(executor.context(), id);
    }

    /** UPDATE_VMA_MAP as the shim calls it in a restored task. */
    public int childUpdateVmaMap(MemorySegment path, long addr, long oldOffset, MemorySegment newOffset,
                                 MemorySegment pluginFd) throws Throwable {
        return (int) childUpdateVmaMap.invokeExact(executor.context(), path, addr, oldOffset, newOffset, pluginFd);
    }

    /** A restored task of its own: a forked process runs RESTORE_EXT_FILE({@code id}); see {@link KfdSimulator#spawnRestore}. */
    public KfdSimulator.Task spawnRestore(int id) {
        return KfdSimulator.spawnRestore(executor.restoreExtFile(), executor.context(), id);
    }

    /** A forked restored task that restores {@code id} and can check its BO contents later. */
    public KfdSimulator.Verifier spawnVerifier(int id, List<KfdSimulator.SizedQuery> queries) {
        return KfdSimulator.spawnVerifier(executor.restoreExtFile(), executor.updateVmaMap(), executor.context(), id,
                queries);
    }

    /** A forked restored task that restores {@code ids} in order; see {@link KfdSimulator#spawnTask}. */
    public KfdSimulator.Verifier spawnTask(int[] ids, List<KfdSimulator.SizedQuery> queries, Path saveDir) {
        return KfdSimulator.spawnTask(executor.restoreExtFile(), executor.updateVmaMap(), executor.context(), ids,
                queries, saveDir);
    }

    public boolean hasChildExecutor() {
        return executor != null;
    }

    /** Binds the plan to the executor as the shim does, over the simulator's calls. */
    @Override
    public boolean setChildExecutor(ChildPlan plan) {
        executor = SimulatedExecutor.load(plan);
        childRestoreExtFile = LINKER.downcallHandle(executor.restoreExtFile(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        childUpdateVmaMap = LINKER.downcallHandle(executor.updateVmaMap(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
        return true;
    }

    @Override
    public String pluginName() {
        return "amdgpu_plugin";
    }

    @Override
    public Stage stage() {
        return stage;
    }

    @Override
    public boolean forced() {
        return false;
    }

    @Override
    public int criuHookCount() {
        return 13;
    }

    @Override
    public Path pluginDir() {
        return images.getParent();
    }

    @Override
    public boolean isLoggable(LogLevel level) {
        return true;
    }

    @Override
    public void log(LogLevel level, String message) {
        lines.add("[" + level + "] " + message);
    }

    @Override
    public Optional<Integer> imageDirFd() {
        return Optional.empty();
    }

    @Override
    public Optional<Path> imageDir() {
        return Optional.of(images);
    }

    @Override
    public boolean addInventoryPlugin() {
        inventory.add(pluginName());
        return true;
    }

    @Override
    public InventoryClaim inventoryClaim() {
        return claim;
    }

    @Override
    public boolean setCompelInterruptOnlyMode() {
        return false;
    }

}

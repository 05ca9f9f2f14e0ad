package dev.criugpu.api;

import dev.criugpu.api.log.CriuLog;
import dev.criugpu.api.sys.CriuArgv;
import dev.criugpu.api.sys.PlanMemory;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The one JNI entry point. The shim calls {@link #start(long)} once per plugin that needs Java, on criu's main
 * thread, with the address of its {@code struct criu_gpu_services}; we route the JVM's log lines through
 * {@link LogSink}, find the plugin, run its init, on restore check the JVM's threads against the image (last, so
 * that the last plugin's check covers every thread), and fill the shim's hook table with upcall stubs ({@link HookStubs}). From then
 * on every hook is a plain native call into {@link HookDispatcher}. This class, {@link HookStubs} and
 * {@link NativeCriuServices} are the shim's seam: the only ones of this package that see native memory.
 */
public final class Bootstrap {
    private Bootstrap() {
    }

    /** Plugins whose {@link CriuPlugin#prepare} ran, by name: the instance {@link #start(long)} then serves. */
    private static final Map<String, CriuPlugin> PREPARED = new ConcurrentHashMap<>();
    /** Their upcall stubs, being made meanwhile on a thread of their own (on restore, inside the parked-pid window). */
    private static final Map<String, CompletableFuture<HookStubs>> STUBS = new ConcurrentHashMap<>();
    /**
     * Each plugin's prepare, on a thread of its own where {@link HookStubs#ahead()}: on a 2-core host it took 45 ms,
     * and criu's main thread then 35 ms more to read the services struct and link criu's log function.
     */
    private static final Map<String, CompletableFuture<Void>> PREPARING = new ConcurrentHashMap<>();
    /** {@link NativeCriuServices#warmUp}, once per JVM. */
    private static final AtomicReference<CompletableFuture<Void>> WARMING = new AtomicReference<>();

    /** Whether this host has the CPUs for work ahead on threads of its own ({@link HookStubs#ahead()}): helpers ask too. */
    public static boolean cpusToSpare() {
        return HookStubs.ahead();
    }

    /**
     * The shim's first call, right after the JVM starts, with plain Java values (no native memory read: the JVM's
     * first use of FFM costs tens of milliseconds): the plugin's {@link CriuPlugin#prepare} starts what init will
     * need, so that it overlaps that cost and the rest of the bootstrap. Nothing it throws reaches the shim; init
     * does the work again and reports what fails. {@code helperDir}: the helper the shim started before the JVM, as
     * "SOCKET_FD OUTPUT_FD PID STATLINE" ({@link HelperProcess#adoptPreStarted}), or null.
     * <p>
     * Where there are CPUs to spare ({@link HookStubs#ahead()}) it returns at once: the plugin's prepare runs on a
     * thread that {@link #start} joins before init, while criu's main thread makes Java's first FFM uses, and another
     * thread makes those same first uses ({@link NativeCriuServices#warmUp}) and then the plugin's
     * {@link CriuPlugin#warmUp}. Every one of these threads starts before this call's {@link #start} returns, so on
     * restore inside the shim's parked-pid window.
     */
    public static void prepare(String pluginName, int stage, String pluginDir, String imagesDir, String helperDir) {
        Runnable work = () -> prepareNow(pluginName, stage, pluginDir, imagesDir, helperDir);
        if (!HookStubs.ahead()) {
            work.run();
            return;
        }
        if (WARMING.get() == null) {
            WARMING.compareAndSet(null, CompletableFuture.runAsync(NativeCriuServices::warmUp,
                    Threads.daemonEach("criu-gpu-ffm-warm-up")));
        }
        PREPARING.put(pluginName, CompletableFuture.runAsync(work, Threads.daemonEach("criu-gpu-prepare")));
    }

    private static void prepareNow(String pluginName, int stage, String pluginDir, String imagesDir, String helperDir) {
        if (helperDir != null) HelperProcess.preStarted(helperDir);
        try {
            Plugins.named(pluginName).ifPresent(plugin -> {
                PREPARED.put(pluginName, plugin);
                if (HookStubs.ahead()) {
                    STUBS.put(pluginName, CompletableFuture.supplyAsync(() -> HookStubs.make(plugin.hooks()),
                            Threads.daemonEach("criu-gpu-hook-stubs")));
                }
                CompletableFuture<Void> warming = WARMING.get();
                if (warming != null) {
                    // started now, inside the shim's parked-pid window on restore, and not after it
                    Threads.startDaemon("criu-gpu-warm-up", () -> {
                        try {
                            warming.join();
                            plugin.warmUp(Stage.of(stage));
                        } catch (RuntimeException e) {
                            // the main thread does it again, and reports what fails
                        }
                    });
                }
                plugin.prepare(Stage.of(stage), Path.of(pluginDir),
                        Optional.ofNullable(imagesDir).map(NativeCriuServices::imageDirOf));
            });
        } catch (RuntimeException e) {
            // init reports it
        }
    }

    /** What {@link #prepare} started on a thread for {@code pluginName} has ended. */
    private static void prepared(String pluginName) {
        CompletableFuture<Void> preparing = PREPARING.remove(pluginName);
        try {
            if (preparing != null) preparing.join();
        } catch (RuntimeException e) {
            // init does the work again and reports what fails
        }
    }

    /** Returns 0, or a negative errno that the shim returns from criu's init (failing the command). */
    public static int start(long servicesAddress) {
        NativeCriuServices services;
        try {
            services = new NativeCriuServices(
                    dev.criugpu.api.bindings.criu_gpu_services.reinterpret(MemorySegment.ofAddress(servicesAddress)));
        } catch (Throwable t) {
            System.err.println("criu-java-gpu: cannot read the shim's services: " + t);
            return -Errno.EINVAL;
        }
        LogSink.bind(services.printOnLevel());
        LogSink.copyErrorsToSystemLog(CriuArgv.selfIsRpcWorker());
        services.helperLauncher().ifPresent(HelperLauncher::use);
        prepared(services.pluginName());
        int rc = HookDispatcher.guarded(services, "bootstrap", () -> start(services, PREPARED.remove(services.pluginName())));
        HelperProcess.discardUnadopted();
        LogSink.drain();
        return rc;
    }

    private static int start(NativeCriuServices services, CriuPlugin found) {
        CriuPlugin plugin = found != null ? found : Plugins.named(services.pluginName()).orElseThrow(() -> new CriuException(Errno.ENOENT,
                "no Java plugin named " + services.pluginName() + " on the class path"));
        int javaMask = Hook.mask(plugin.hooks());
        if (javaMask != services.hookMask()) {
            throw new CriuException(Errno.EINVAL, String.format(
                    "%s: the shim registers hooks 0x%x but the Java plugin declares 0x%x (mismatched build)",
                    plugin.name(), services.hookMask(), javaMask));
        }
        CriuLog.register(plugin.getClass().getPackageName(), services);
        CriuExit.bind(services);
        services.planRegion().ifPresent(PlanMemory::shareWithChildren);
        if (services.restoreCheckOnly()) {
            // the probe's verdict is all it gives, with where criu's JVM parks its pids: its threads end with it,
            // before criu forks (DESIGN rule 1)
            Faults.stall(services, "restore-probe");
            int rc = plugin.checkRestore(services);
            if (rc == 0) PidGuard.chooseParking(services);
            return rc;
        }
        int rc = plugin.init(services.stage(), services);
        if (rc != 0) return rc;
        if (services.stage() == Stage.RESTORE) PidGuard.checkRestore(services);
        stubs(plugin).install(new HookDispatcher(plugin, services), services.hookTable(), services.criuHookCount());
        return 0;
    }

    /** The stubs prepare had made for {@code plugin}, or, where it made none or failed, new ones. */
    private static HookStubs stubs(CriuPlugin plugin) {
        CompletableFuture<HookStubs> early = STUBS.remove(plugin.name());
        try {
            if (early != null) return early.join();
        } catch (RuntimeException e) {
            // made again below, on this thread, where a failure is reported
        }
        return HookStubs.make(plugin.hooks());
    }
}

package dev.criugpu.api;

import dev.criugpu.api.bindings.criu_gpu_services;
import dev.criugpu.api.sys.Syscalls;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Drives {@link Bootstrap} the way the shim does: a native services struct whose criu functions are upcall stubs
 * standing in for criu's exports, and hooks called through the function pointers Bootstrap wrote.
 */
class BootstrapTest {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final List<String> LOG = new ArrayList<>();
    private static final List<String> INVENTORY = new ArrayList<>();

    private final Arena arena = Arena.ofAuto();
    private MemorySegment services;
    private MemorySegment table;

    static void printOnLevel(int level, MemorySegment fmt, MemorySegment line) {
        LOG.add(level + " " + line.reinterpret(2 * LogSink.MAX_LINE_BYTES).getString(0).strip());
    }

    static int logLevel() {
        return LogLevel.DEBUG.id;
    }

    /** criu_get_image_dir: an fd of {@link #images}, or -1 (no images dir) when the test opened none. */
    static int imageDirFd() {
        return imageDirFd;
    }

    private static volatile int imageDirFd = -1;
    private static PrintStream savedOut;
    private static PrintStream savedErr;

    @TempDir
    Path images;

    @BeforeAll
    static void saveStdStreams() {
        savedOut = System.out;
        savedErr = System.err;
    }

    /** The first bootstrap in a JVM sends System.out and System.err into criu's log; give the test runner its own back. */
    @AfterAll
    static void restoreStdStreams() {
        System.setOut(savedOut);
        System.setErr(savedErr);
    }

    @AfterEach
    void closeImageDir() {
        if (imageDirFd >= 0) Syscalls.libc().close(imageDirFd);
        imageDirFd = -1;
        FixedTaskIds.ids = Set.of();
    }

    static int addInventoryPlugin(MemorySegment name) {
        INVENTORY.add(name.reinterpret(256).getString(0));
        return 0;
    }

    private MemorySegment stub(String method, MethodType type, FunctionDescriptor fd) throws Exception {
        MethodHandle mh = MethodHandles.lookup().findStatic(BootstrapTest.class, method, type);
        return LINKER.upcallStub(mh, fd, Arena.global());
    }

    @BeforeEach
    void services() throws Exception {
        LOG.clear();
        INVENTORY.clear();
        RecordingPlugin.CALLS.clear();
        RecordingPlugin.initResult = 0;
        services = arena.allocate(criu_gpu_services.layout());
        table = arena.allocate(ADDRESS, Hook.TABLE_SLOTS);
        criu_gpu_services.size(services, (int) criu_gpu_services.layout().byteSize());
        criu_gpu_services.stage(services, Stage.RESTORE.id);
        criu_gpu_services.criu_hook_count(services, 13);
        criu_gpu_services.inventory_claim(services, InventoryClaim.LISTED.ordinal());
        criu_gpu_services.hook_mask(services, (1 << 10) | (1 << 11) | (1 << 8) | (1 << 2));
        criu_gpu_services.set(services, "plugin_name", arena.allocateFrom("recording_plugin"));
        criu_gpu_services.set(services, "plugin_dir", arena.allocateFrom("/nonexistent"));
        criu_gpu_services.set(services, "hook_table", table);
        criu_gpu_services.set(services, "print_on_level", stub("printOnLevel",
                MethodType.methodType(void.class, int.class, MemorySegment.class, MemorySegment.class),
                FunctionDescriptor.ofVoid(JAVA_INT, ADDRESS, ADDRESS.withTargetLayout(JAVA_INT))));
        criu_gpu_services.set(services, "log_get_loglevel",
                stub("logLevel", MethodType.methodType(int.class), FunctionDescriptor.of(JAVA_INT)));
        criu_gpu_services.set(services, "add_inventory_plugin", stub("addInventoryPlugin",
                MethodType.methodType(int.class, MemorySegment.class), FunctionDescriptor.of(JAVA_INT, ADDRESS)));
        criu_gpu_services.set(services, "criu_get_image_dir",
                stub("imageDirFd", MethodType.methodType(int.class), FunctionDescriptor.of(JAVA_INT)));
    }

    private int callIntHook(Hook hook, int arg) throws Throwable {
        MemorySegment fn = table.getAtIndex(ADDRESS, hook.id);
        return (int) LINKER.downcallHandle(fn, FunctionDescriptor.of(JAVA_INT, JAVA_INT)).invokeExact(arg);
    }

    @Test
    void prepareRunsFirstOnTheInstanceThatInitThenServes() {
        Bootstrap.prepare("recording_plugin", Stage.RESTORE.id, "/nonexistent", null, null);
        assertEquals(0, Bootstrap.start(services.address()));
        assertEquals(2, RecordingPlugin.CALLS.size(), RecordingPlugin.CALLS.toString());
        String prepared = RecordingPlugin.CALLS.get(0);
        assertTrue(prepared.startsWith("prepare RESTORE /nonexistent @"), prepared);
        String instance = prepared.substring(prepared.indexOf('@'));
        assertEquals("init RESTORE LISTED " + instance, RecordingPlugin.CALLS.get(1));
    }

    @Test
    void stubsMadeDuringPrepareReachThePluginOnlyOnceInitSucceeded() throws Throwable {
        HookStubs.minCpusAhead = 0; // the early path, whatever this machine's CPUs
        try {
            stubsMadeDuringPrepare();
        } finally {
            HookStubs.minCpusAhead = HookStubs.MIN_CPUS_AHEAD;
        }
    }

    private void stubsMadeDuringPrepare() throws Throwable {
        RecordingPlugin.initResult = -Errno.ENODEV;
        Bootstrap.prepare("recording_plugin", Stage.RESTORE.id, "/nonexistent", null, null);
        assertEquals(-Errno.ENODEV, Bootstrap.start(services.address()));
        assertEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.PAUSE_DEVICES.id), "no stub after a refusal");

        RecordingPlugin.initResult = 0;
        RecordingPlugin.CALLS.clear();
        Bootstrap.prepare("recording_plugin", Stage.RESTORE.id, "/nonexistent", null, null);
        assertEquals(0, Bootstrap.start(services.address()));
        assertEquals(0, callIntHook(Hook.PAUSE_DEVICES, 42));
        LINKER.downcallHandle(table.getAtIndex(ADDRESS, Hook.EXIT_SLOT), HookStubs.EXIT_DESCRIPTOR)
                .invokeExact(Stage.RESTORE.id, 0);
        String instance = RecordingPlugin.CALLS.get(0).substring(RecordingPlugin.CALLS.get(0).indexOf('@'));
        assertEquals(List.of("init RESTORE LISTED " + instance, "pause 42", "exit RESTORE 0"),
                RecordingPlugin.CALLS.subList(1, RecordingPlugin.CALLS.size()));
    }

    @Test
    void withCpusToSparePrepareReturnsAtOnceAndInitWaitsForIt() {
        HookStubs.minCpusAhead = 0;
        java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
        RecordingPlugin.prepareGate = gate;
        try {
            Bootstrap.prepare("recording_plugin", Stage.RESTORE.id, "/nonexistent", null, null);
            assertEquals(List.of(), RecordingPlugin.CALLS, "the plugin's prepare is still waiting on its own thread");
            Threads.startDaemon("test-opens-the-gate", gate::countDown);
            assertEquals(0, Bootstrap.start(services.address()));
        } finally {
            RecordingPlugin.prepareGate = null;
            HookStubs.minCpusAhead = HookStubs.MIN_CPUS_AHEAD;
        }
        assertEquals(2, RecordingPlugin.CALLS.size(), RecordingPlugin.CALLS.toString());
        assertTrue(RecordingPlugin.CALLS.get(0).startsWith("prepare RESTORE"), RecordingPlugin.CALLS.toString());
        assertTrue(RecordingPlugin.CALLS.get(1).startsWith("init RESTORE LISTED @"), RecordingPlugin.CALLS.toString());
    }

    @Test
    void aPrepareForAPluginNotOnTheClassPathIsIgnored() {
        Bootstrap.prepare("no_such_plugin", Stage.DUMP.id, "/nonexistent", null, null);
        assertEquals(List.of(), RecordingPlugin.CALLS);
    }

    @Test
    void fillsMainProcessHooksOnlyAndForwardsCalls() throws Throwable {
        assertEquals(0, Bootstrap.start(services.address()));
        assertEquals(List.of("init RESTORE LISTED"), RecordingPlugin.CALLS);
        assertEquals(List.of("recording_plugin"), INVENTORY);

        assertNotEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.PAUSE_DEVICES.id));
        assertNotEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.DUMP_EXT_FILE.id));
        assertEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.UPDATE_VMA_MAP.id), "child hook in Java");
        assertEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.RESUME_DEVICES_LATE.id), "unregistered");

        assertEquals(0, callIntHook(Hook.PAUSE_DEVICES, 42));
        assertEquals(Errno.NOT_SUPPORTED, callIntHook(Hook.CHECKPOINT_DEVICES, 42), "default is -ENOTSUP");
        MemorySegment extFile = table.getAtIndex(ADDRESS, Hook.DUMP_EXT_FILE.id);
        assertEquals(7, (int) LINKER.downcallHandle(extFile, FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT))
                .invokeExact(5, 9));
        MemorySegment exit = table.getAtIndex(ADDRESS, Hook.EXIT_SLOT);
        LINKER.downcallHandle(exit, HookStubs.EXIT_DESCRIPTOR).invokeExact(Stage.RESTORE.id, 0);

        assertEquals(List.of("init RESTORE LISTED", "pause 42", "dump-ext-file 5 9", "exit RESTORE 0"),
                RecordingPlugin.CALLS);
        assertTrue(LOG.contains("4 recording_plugin: hook PAUSE_DEVICES(pid=42) entered Java"), LOG.toString());
        assertTrue(LOG.contains("4 recording_plugin: hook EXIT(stage=2, ret=0) entered Java"), LOG.toString());
    }

    @Test
    void exceptionsBecomeOneErrorLineAndNegativeErrno() throws Throwable {
        assertEquals(0, Bootstrap.start(services.address()));
        assertEquals(-Errno.ETIMEDOUT, callIntHook(Hook.PAUSE_DEVICES, 13));
        assertTrue(LOG.contains("1 Error (recording_plugin): pid 13: lock timed out"), LOG.toString());
        assertEquals(-Errno.EIO, callIntHook(Hook.PAUSE_DEVICES, 66));
        assertTrue(LOG.stream().anyMatch(l -> l.startsWith("1 Error (recording_plugin): PAUSE_DEVICES failed: "
                + "java.lang.IllegalStateException: bug")), LOG.toString());
    }

    @Test
    void hookMaskMismatchFailsBootstrapWithAClearLine() {
        criu_gpu_services.hook_mask(services, 1 << 10);
        assertEquals(-Errno.EINVAL, Bootstrap.start(services.address()));
        assertTrue(RecordingPlugin.CALLS.isEmpty());
        assertTrue(LOG.stream().anyMatch(l -> l.contains("mismatched build")), LOG.toString());
        assertEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.PAUSE_DEVICES.id));
    }

    @Test
    void failingInitLeavesTheTableEmpty() {
        RecordingPlugin.initResult = -Errno.ENODEV;
        assertEquals(-Errno.ENODEV, Bootstrap.start(services.address()));
        assertEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.PAUSE_DEVICES.id));
        assertEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.EXIT_SLOT));
    }

    @Test
    void unknownPluginNameIsReported() {
        criu_gpu_services.set(services, "plugin_name", arena.allocateFrom("nvidia_plugin"));
        assertEquals(-Errno.ENOENT, Bootstrap.start(services.address()));
        assertTrue(LOG.stream().anyMatch(l -> l.contains("no Java plugin named nvidia_plugin")), LOG.toString());
    }

    @Test
    void hooksTheRunningCriuLacksAreNotInstalled() {
        criu_gpu_services.criu_hook_count(services, 11);
        assertEquals(0, Bootstrap.start(services.address()));
        assertEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.CHECKPOINT_DEVICES.id));
        assertNotEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.PAUSE_DEVICES.id));
    }

    @Test
    void onRestoreTheJvmsThreadsAreCheckedAgainstTheImageAfterInit() {
        imageDirFd = Syscalls.libc().open(images.toString(), Syscalls.O_RDONLY);
        FixedTaskIds.ids = Set.of(1, (int) ProcessHandle.current().pid());

        assertEquals(-Errno.EBUSY, Bootstrap.start(services.address()));
        assertEquals(List.of("init RESTORE LISTED"), RecordingPlugin.CALLS, "the check runs after the plugin's init");
        assertTrue(LOG.contains("1 Error (recording_plugin): JVM threads hold ids [" + ProcessHandle.current().pid()
                + "] that the image's tasks need; restore into a new pid namespace or free those ids, then retry"),
                LOG.toString());
        assertEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.PAUSE_DEVICES.id), "no hook after a refusal");

        FixedTaskIds.ids = Set.of(1);
        assertEquals(0, Bootstrap.start(services.address()));
        assertTrue(LOG.stream().anyMatch(l -> l.startsWith("4 recording_plugin: JVM threads after init: ")), LOG.toString());
    }

    /** The probe's threads end with it: it checks none of them, but tells the shim where criu's JVM parks its pids. */
    @Test
    void theRestoreProbeParksCriusJvmBelowAWindowFreeOfTheImagesIds() throws Exception {
        imageDirFd = Syscalls.libc().open(images.toString(), Syscalls.O_RDONLY);
        long pidMax = PidGuard.pidMax();
        int top = (int) pidMax - 40; // where the shim's default (1024 below pid_max) would put the JVM's threads
        FixedTaskIds.ids = Set.of(1, top);
        criu_gpu_services.flags(services, criu_gpu_services.FLAG_RESTORE_CHECK);

        assertEquals(0, Bootstrap.start(services.address()), LOG.toString());
        assertEquals(List.of("checkRestore LISTED"), RecordingPlugin.CALLS, "the probe checks; it does not init");
        assertEquals(top - 1 - PidGuard.PARK_WINDOW, criu_gpu_services.park_last_pid(services));
        assertEquals(MemorySegment.NULL, table.getAtIndex(ADDRESS, Hook.PAUSE_DEVICES.id), "the probe serves no hook");
    }

    @Test
    void theProbesRefusalIsItsVerdictAndParksNothing() throws Exception {
        imageDirFd = Syscalls.libc().open(images.toString(), Syscalls.O_RDONLY);
        criu_gpu_services.flags(services, criu_gpu_services.FLAG_RESTORE_CHECK);
        RecordingPlugin.initResult = -Errno.ENODEV;

        assertEquals(-Errno.ENODEV, Bootstrap.start(services.address()));
        assertEquals(List.of("checkRestore LISTED"), RecordingPlugin.CALLS);
        assertEquals(0, criu_gpu_services.park_last_pid(services));
    }

    @Test
    void otherThreadsLinesWaitForTheHookThreadAndEveryLineIsCappedAndPrefixed() throws Throwable {
        assertEquals(0, Bootstrap.start(services.address()));
        String longLine = "x".repeat(3 * LogSink.MAX_LINE_BYTES);
        Thread worker = Thread.ofPlatform().start(() -> {
            System.err.println("from a worker");
            System.out.println(longLine);
        });
        worker.join();
        assertTrue(LOG.stream().noneMatch(l -> l.contains("from a worker")), "printed off criu's main thread: " + LOG);

        callIntHook(Hook.PAUSE_DEVICES, 42);
        assertTrue(LOG.contains("2 Warn  (criu-java-gpu): from a worker"), LOG.toString());
        String cut = LOG.stream().filter(l -> l.startsWith("3 criu-java-gpu: xxx")).findFirst().orElseThrow();
        assertTrue(cut.endsWith(" more bytes]"), cut.substring(cut.length() - 40));
        assertTrue(cut.length() - 2 < LogSink.MAX_LINE_BYTES, "line of " + cut.length() + " bytes");
        assertTrue(LOG.indexOf("2 Warn  (criu-java-gpu): from a worker")
                < LOG.indexOf("4 recording_plugin: hook PAUSE_DEVICES(pid=42) entered Java"), "queued lines first");
    }

    @Test
    void aMessageOfSeveralLinesIsSeveralPrefixedLines() {
        assertEquals(List.of("cuda_plugin: one", "cuda_plugin: two"), LogLines.of("cuda_plugin", LogLevel.INFO, "one\ntwo\n"));
        assertEquals(List.of("Error (cuda_plugin): bad"), LogLines.of("cuda_plugin", LogLevel.ERROR, "bad"));
        String multiByte = "é".repeat(LogSink.MAX_LINE_BYTES);
        String capped = LogSink.cap(multiByte);
        assertTrue(capped.getBytes(java.nio.charset.StandardCharsets.UTF_8).length < LogSink.MAX_LINE_BYTES);
        assertTrue(capped.startsWith("éé") && capped.endsWith(" more bytes]"), capped.substring(capped.length() - 30));
    }

    @Test
    void whatOtherThreadsLogBeyondTheQueueIsCountedAndSaidOnce() throws Throwable {
        assertEquals(0, Bootstrap.start(services.address()));
        Thread worker = Thread.ofPlatform().start(() -> {
            for (int i = 0; i < LogSink.MAX_QUEUED + 5; i++) System.err.println("line " + i);
        });
        worker.join();
        callIntHook(Hook.PAUSE_DEVICES, 42);
        assertEquals(LogSink.MAX_QUEUED, LOG.stream().filter(l -> l.startsWith("2 Warn  (criu-java-gpu): line ")).count());
        assertTrue(LOG.contains("2 Warn  (criu-java-gpu): 5 log lines of worker threads dropped: more than "
                + LogSink.MAX_QUEUED + " waited for criu's main thread"), LOG.subList(LOG.size() - 5, LOG.size()).toString());
    }
}

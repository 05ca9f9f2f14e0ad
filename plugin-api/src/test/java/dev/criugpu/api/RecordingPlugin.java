package dev.criugpu.api;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/** A plugin for bootstrap tests: records its calls; pid 13 throws a CriuException, pid 66 a runtime bug. */
public final class RecordingPlugin implements CriuPlugin {
    static final List<String> CALLS = new ArrayList<>();
    static volatile int initResult;
    /** When set, prepare waits for it before it records its call. */
    static volatile java.util.concurrent.CountDownLatch prepareGate;

    @Override
    public String name() {
        return "recording_plugin";
    }

    @Override
    public Set<Hook> hooks() {
        return EnumSet.of(Hook.PAUSE_DEVICES, Hook.CHECKPOINT_DEVICES, Hook.UPDATE_VMA_MAP, Hook.DUMP_EXT_FILE);
    }

    @Override
    public void prepare(Stage stage, java.nio.file.Path pluginDir, java.util.Optional<java.nio.file.Path> imagesDir) {
        java.util.concurrent.CountDownLatch gate = prepareGate;
        try {
            if (gate != null) gate.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        CALLS.add("prepare " + stage + " " + pluginDir + " @" + System.identityHashCode(this));
    }

    @Override
    public int init(Stage stage, CriuServices services) {
        CALLS.add("init " + stage + " " + services.inventoryClaim() + (CALLS.stream().anyMatch(c -> c.startsWith("prepare"))
                ? " @" + System.identityHashCode(this) : ""));
        services.addInventoryPlugin();
        return initResult;
    }

    @Override
    public int checkRestore(CriuServices services) {
        CALLS.add("checkRestore " + services.inventoryClaim());
        return initResult;
    }

    @Override
    public void exit(Stage stage, int ret) {
        CALLS.add("exit " + stage + " " + ret);
    }

    @Override
    public Diagnosis diagnose() {
        return Diagnosis.disabled(name(), "test plugin", List.of());
    }

    @Override
    public int pauseDevices(int pid) {
        CALLS.add("pause " + pid);
        if (pid == 13) throw new CriuException(Errno.ETIMEDOUT, "pid 13: lock timed out");
        if (pid == 66) throw new IllegalStateException("bug");
        return 0;
    }

    @Override
    public int dumpExtFile(int fd, int id) {
        CALLS.add("dump-ext-file " + fd + " " + id);
        return 7;
    }
}

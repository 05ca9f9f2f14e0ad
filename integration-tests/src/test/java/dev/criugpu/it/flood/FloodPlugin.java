package dev.criugpu.it.flood;

import dev.criugpu.api.CriuPlugin;
import dev.criugpu.api.CriuServices;
import dev.criugpu.api.Diagnosis;
import dev.criugpu.api.Hook;
import dev.criugpu.api.Stage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

/**
 * Runs inside criu for LogFloodIT, first on the class path so that it serves as {@code cuda_plugin}: in
 * PAUSE_DEVICES, {@link #THREADS} threads and the hook thread itself log {@link #LINES} lines each at once, every
 * seventh of them far longer than a line may be; then a thread dies of an uncaught exception and one line goes to
 * System.err.
 */
public final class FloodPlugin implements CriuPlugin {
    public static final int THREADS = 4;
    public static final int LINES = 300;
    public static final int LONG_EVERY = 7;
    private static final Logger log = LoggerFactory.getLogger(FloodPlugin.class);

    @Override
    public String name() {
        return "cuda_plugin";
    }

    /** The real CUDA plugin's hooks: the shim it stands in for registers exactly those. */
    @Override
    public Set<Hook> hooks() {
        return new dev.criugpu.cuda.CudaPlugin().hooks();
    }

    @Override
    public int init(Stage stage, CriuServices services) {
        return 0;
    }

    /** The line source {@code who} logs as its {@code i}-th. */
    public static String line(String who, int i) {
        return "flood " + who + " " + i + " " + "x".repeat(i % LONG_EVERY == 0 ? 10_000 : 40);
    }

    @Override
    public int pauseDevices(int pid) {
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            String who = Integer.toString(t);
            threads.add(Thread.ofPlatform().name("flood-" + t).start(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < LINES; i++) log.info(line(who, i));
            }));
        }
        go.countDown();
        for (int i = 0; i < LINES; i++) log.info(line("main", i));
        try {
            for (Thread t : threads) t.join();
            Thread.ofPlatform().name("flood-crash").start(() -> {
                throw new IllegalStateException("flood worker gave up");
            }).join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        System.err.println("flood stderr " + pid);
        return 0;
    }

    @Override
    public Diagnosis diagnose() {
        return Diagnosis.disabled(name(), "a test plugin", List.of());
    }
}

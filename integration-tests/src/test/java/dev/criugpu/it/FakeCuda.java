package dev.criugpu.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * cuda-plugin's stand-in for NVIDIA's cuda-checkpoint (its test script {@code fake-cuda-checkpoint.sh}) installed in
 * a container directory as {@code cuda-checkpoint}: it keeps each pid's CUDA state in {@code state-<pid>} next to
 * itself and logs every call to {@code calls.log}. {@link #env} points a criu command at it: the CLI backend in
 * forced mode, the script first on criu's PATH (the CUDA agent gets PATH from criu), and restore thread = the task's
 * main thread, which criu really seizes, so the real ptrace wake and re-stop work on it. The script's own settings
 * ({@link #set}) are in the file {@code settings} next to it: the plugins start programs with named variables only.
 */
public final class FakeCuda {
    private static final String SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

    private final CriuContainer container;
    public final String dir;
    private final Map<String, String> settings = new TreeMap<>();

    private FakeCuda(CriuContainer container, String dir) {
        this.container = container;
        this.dir = dir;
    }

    /** Installs the script as {@code dir/cuda-checkpoint}. */
    public static FakeCuda install(CriuContainer container, String dir) {
        Path script = Path.of(System.getProperty("criugpu.fake.cuda.checkpoint",
                "../cuda-plugin/src/test/resources/fake-cuda-checkpoint.sh"));
        try {
            container.writeFile(dir + "/cuda-checkpoint", Files.readString(script), 0755);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the fake cuda-checkpoint " + script.toAbsolutePath(), e);
        }
        return new FakeCuda(container, dir);
    }

    /** {@code command} with the settings above added. */
    public CriuCommand env(CriuCommand command) {
        set("FAKE_CUDA_RESTORE_TID", "self");
        return command.env("PATH", dir + ":" + SYSTEM_PATH).env("CRIU_CUDA_BACKEND", "cli");
    }

    /** One of the script's settings (fake-cuda-checkpoint.sh names them), for every call from now on. */
    public void set(String name, String value) {
        settings.put(name, value);
        StringBuilder text = new StringBuilder();
        settings.forEach((n, v) -> text.append(n).append('=').append(v).append('\n'));
        container.writeFile(dir + "/settings", text.toString(), 0644);
    }

    public void setState(int pid, String state) {
        container.writeFile(dir + "/state-" + pid, state + "\n", 0644);
    }

    /**
     * The script's word for {@code pid}; "" while it has none. Read with cat, not a copy out of the container: the
     * script rewrites the file while tests poll it, and Docker's archive of a file being written comes out truncated.
     */
    public String state(int pid) {
        CommandResult r = container.exec("cat", dir + "/state-" + pid);
        return r.succeeded() ? r.stdout().strip() : "";
    }

    /** Waits until the script says {@code pid} is in {@code state}. */
    public void awaitState(int pid, String state, Duration timeout) {
        Eventually.await("pid " + pid + " to be " + state + " for the fake cuda-checkpoint", timeout,
                () -> state.equals(state(pid)), () -> "it is '" + state(pid) + "'; calls: " + calls());
    }

    /** The script's arguments, one call a line. */
    public List<String> calls() {
        return container.readFileIfExists(dir + "/calls.log").lines().toList();
    }

    /** A workload the fake knows as a RUNNING CUDA task, with the fake installed in {@code dir}/bin. */
    public record Running(FakeCuda cuda, CounterWorkload counter, int pid) {
    }

    /**
     * Installs the fake in {@code dir}/bin, starts {@code workload} writing {@code dir}/counter (killed by
     * {@code cleanup}) and makes its pid a RUNNING CUDA task.
     */
    public static Running startCudaTask(CriuContainer c, String dir,
                                        java.util.function.BiFunction<CriuContainer, String, CounterWorkload> workload,
                                        List<Runnable> cleanup) {
        c.exec("mkdir", "-p", dir + "/bin").orFail();
        FakeCuda cuda = install(c, dir + "/bin");
        CounterWorkload counter = workload.apply(c, dir + "/counter");
        cleanup.add(counter::kill);
        int pid = counter.rootPid();
        cuda.setState(pid, "running");
        return new Running(cuda, counter, pid);
    }
}

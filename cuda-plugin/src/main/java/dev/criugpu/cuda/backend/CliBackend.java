package dev.criugpu.cuda.backend;

import dev.criugpu.api.ChildEnvironment;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.sys.TrustedPaths;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.state.CudaAction;
import dev.criugpu.cuda.state.CudaState;

import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.stream.Collectors;

/**
 * NVIDIA's {@code cuda-checkpoint} executable as a backend: one process run per call. A failed run's exit status
 * (the CUresult) and output become the {@link CudaCallException}.
 */
public final class CliBackend implements CudaBackend {
    public static final String EXECUTABLE = "cuda-checkpoint";
    /** The CLI backend's code for "the executable could not be run" (no CUresult uses it). */
    public static final int RUN_FAILED = -1;

    private final Path executable;
    private final boolean actions;
    private final boolean deviceMap;

    private CliBackend(Path executable, boolean actions, boolean deviceMap) {
        this.executable = executable;
        this.actions = actions;
        this.deviceMap = deviceMap;
    }

    /**
     * Runs {@code executable --help} to learn what it supports (r555: --action, r580: --device-map). Only a trusted
     * file is run (DESIGN rule 11: it and every directory on the way belong to root or to us and no one else may write
     * them), by its real path.
     */
    public static CliBackend open(Path executable) throws CudaCallException {
        Path trusted;
        try {
            trusted = TrustedPaths.requireSafeToLoad(executable);
        } catch (CriuException e) {
            throw new CudaCallException(RUN_FAILED, "not running " + executable + ": " + e.getMessage());
        }
        return openTrusted(trusted);
    }

    private static CliBackend openTrusted(Path executable) throws CudaCallException {
        String help = run(executable, List.of("--help")).output;
        return new CliBackend(executable, help.contains("--action"), help.contains("--device-map"));
    }

    /**
     * {@code cuda-checkpoint} in one of the absolute PATH directories, executable and trusted (criu runs it as root),
     * by its real path; an untrusted one is skipped as if absent, with a warning.
     */
    public static Optional<Path> findInPath(String path) {
        if (path == null) return Optional.empty();
        for (String dir : path.split(":")) {
            if (dir.isEmpty() || !dir.startsWith("/")) continue;
            Path p = Path.of(dir, EXECUTABLE);
            if (!Files.isRegularFile(p) || !Files.isExecutable(p)) continue;
            try {
                return Optional.of(TrustedPaths.requireSafeToLoad(p));
            } catch (CriuException e) {
                LoggerFactory.getLogger(CliBackend.class).warn("not running {}: {}", p, e.getMessage());
            }
        }
        return Optional.empty();
    }

    /** Whether this cuda-checkpoint has --action (r555+); without it only --toggle exists and we cannot use it. */
    public boolean supportsActions() {
        return actions;
    }

    public Path executable() {
        return executable;
    }

    @Override
    public String name() {
        return "cli";
    }

    @Override
    public String describe() {
        return EXECUTABLE + " at " + executable + (deviceMap ? " (with --device-map)" : "");
    }

    @Override
    public boolean supportsGpuRemap() {
        return deviceMap;
    }

    private record Outcome(int status, String output) {
    }

    private static Outcome run(Path executable, List<String> args) throws CudaCallException {
        List<String> command = new ArrayList<>();
        command.add(executable.toString());
        command.addAll(args);
        try {
            Process p = ChildEnvironment.applyTo(new ProcessBuilder(command)).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            return new Outcome(p.waitFor(), out.strip());
        } catch (IOException e) {
            throw new CudaCallException(RUN_FAILED, "cannot run " + executable + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CudaCallException(RUN_FAILED, "interrupted while running " + executable);
        }
    }

    private String call(List<String> args) throws CudaCallException {
        Outcome o = run(executable, args);
        if (o.status != 0) {
            throw new CudaCallException(o.status, o.output.isEmpty() ? EXECUTABLE + " exited with " + o.status : o.output);
        }
        return o.output;
    }

    private void action(CudaAction action, int pid, List<String> extra) throws CudaCallException {
        List<String> args = new ArrayList<>(List.of("--action", action.word, "--pid", Integer.toString(pid)));
        args.addAll(extra);
        call(args);
    }

    @Override
    public OptionalInt restoreThread(int pid) throws CudaCallException {
        Outcome o = run(executable, List.of("--get-restore-tid", "--pid", Integer.toString(pid)));
        if (o.status != 0) return OptionalInt.empty(); // no CUDA in that process
        try {
            int tid = Integer.parseInt(o.output.strip());
            if (tid <= 0) throw new NumberFormatException();
            return OptionalInt.of(tid);
        } catch (NumberFormatException e) {
            throw new CudaCallException(RUN_FAILED, EXECUTABLE + " --get-restore-tid printed '" + o.output + "', not a thread id");
        }
    }

    @Override
    public CudaState state(int pid) throws CudaCallException {
        String out = call(List.of("--get-state", "--pid", Integer.toString(pid)));
        return CudaState.ofWord(out).orElseThrow(() ->
                new CudaCallException(RUN_FAILED, EXECUTABLE + " --get-state printed '" + out + "', not a state"));
    }

    @Override
    public void lock(int pid, int timeoutMs) throws CudaCallException {
        action(CudaAction.LOCK, pid, timeoutMs > 0 ? List.of("--timeout", Integer.toString(timeoutMs)) : List.of());
    }

    @Override
    public void checkpoint(int pid) throws CudaCallException {
        action(CudaAction.CHECKPOINT, pid, List.of());
    }

    @Override
    public void restore(int pid, List<GpuPair> pairs) throws CudaCallException {
        if (pairs.isEmpty()) {
            action(CudaAction.RESTORE, pid, List.of());
            return;
        }
        if (!deviceMap) {
            throw new CudaCallException(RUN_FAILED, "restoring onto other GPUs needs a cuda-checkpoint with --device-map (r580); "
                    + executable + " has none");
        }
        String map = pairs.stream().map(GpuPair::toString).collect(Collectors.joining(","));
        action(CudaAction.RESTORE, pid, List.of("--device-map", map));
    }

    @Override
    public void unlock(int pid) throws CudaCallException {
        action(CudaAction.UNLOCK, pid, List.of());
    }
}

package dev.criugpu.cuda.guard;

import dev.criugpu.cuda.backend.CliBackend;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.state.CudaState;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Starts {@link DumpGuardian} in its own process, detached from criu: criu 4.2 runs its post-dump script before the
 * plugin exit but passes the exit only the dump's own result, and kills or resumes the tree afterwards, so only
 * something that outlives criu can tell which it did.
 * The guardian must not stay criu's child (criu waits for all its children after killing the tree), so a shell
 * starts it in the background and exits at once; we reap that shell here.
 */
public final class GuardianLauncher {
    private GuardianLauncher() {
    }

    /** A task to watch: pid, its /proc start time (guards against pid reuse), and the state to return it to. */
    public record GuardedTask(int pid, long startTime, CudaState initial) {
        String arg() {
            return pid + ":" + startTime + ":" + initial.word();
        }

        static GuardedTask parse(String arg) {
            String[] f = arg.split(":");
            if (f.length != 3) throw new IllegalArgumentException("task '" + arg + "' is not pid:starttime:state");
            CudaState s = CudaState.ofWord(f[2]).orElseThrow(() ->
                    new IllegalArgumentException("task '" + arg + "': unknown state " + f[2]));
            return new GuardedTask(Integer.parseInt(f[0]), Long.parseLong(f[1]), s);
        }
    }

    /** The guardian's arguments (what {@link DumpGuardian#run} parses). */
    public static List<String> arguments(long criuPid, CudaBackend backend, List<GuardedTask> tasks) {
        List<String> args = new ArrayList<>(List.of("--criu-pid", Long.toString(criuPid), "--backend", backend.name()));
        if (backend instanceof CliBackend cli) args.addAll(List.of("--cuda-checkpoint", cli.executable().toString()));
        for (GuardedTask t : tasks) args.addAll(List.of("--task", t.arg()));
        return args;
    }

    public static void launch(long criuPid, CudaBackend backend, List<GuardedTask> tasks, Path logFile) throws IOException {
        if (dev.criugpu.api.bindings.libc_h.isChildSubreaper()) {
            throw new IOException("this criu is a child subreaper: a detached guardian would become its child and "
                    + "block its final wait");
        }
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        if (!Files.isExecutable(java)) throw new IOException(java + " is not executable");
        List<String> command = new ArrayList<>(List.of("/bin/sh", "-c",
                "\"$@\" </dev/null >>\"$CRIU_CUDA_GUARD_LOG\" 2>&1 &", "criu-cuda-guard",
                java.toString(), "-Xmx32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                DumpGuardian.class.getName()));
        command.addAll(arguments(criuPid, backend, tasks));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("CRIU_CUDA_GUARD_LOG", logFile.toString());
        Process shell = pb.start();
        try {
            int rc = shell.waitFor();
            if (rc != 0) throw new IOException("/bin/sh exited with " + rc + " starting the guardian");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting the guardian");
        }
    }
}

package dev.criugpu.cuda.guard;

import dev.criugpu.cuda.backend.CliBackend;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.backend.DriverBackend;
import dev.criugpu.cuda.proc.Procs;
import dev.criugpu.cuda.state.CudaAction;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.cuda.state.Transitions;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Waits for criu to exit, then returns each dumped CUDA task that is still alive (same pid, same start time) to
 * the state it had before the dump: criu resumed the tree (post-dump script, RPC notify answer) or died. Tasks
 * criu killed are gone and cost nothing.
 */
public final class DumpGuardian {
    private DumpGuardian() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out));
    }

    /** Returns 0 when every surviving task was returned (or none survived), 1 otherwise. */
    public static int run(String[] args, PrintStream out) {
        long criuPid = -1;
        String backendName = "driver";
        Path cli = null;
        List<GuardianLauncher.GuardedTask> tasks = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String value = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--criu-pid" -> criuPid = Long.parseLong(value);
                case "--backend" -> backendName = value;
                case "--cuda-checkpoint" -> cli = Path.of(value);
                case "--task" -> tasks.add(GuardianLauncher.GuardedTask.parse(value));
                default -> {
                    out.println("cuda guardian: unknown argument " + args[i]);
                    return 2;
                }
            }
            i++;
        }
        Optional<ProcessHandle> criu = ProcessHandle.of(criuPid);
        criu.ifPresent(h -> h.onExit().join());
        List<GuardianLauncher.GuardedTask> alive = tasks.stream().filter(DumpGuardian::survived).toList();
        if (alive.isEmpty()) {
            out.println("cuda guardian: criu " + criuPid + " exited; no dumped CUDA task survived it");
            return 0;
        }
        CudaBackend backend;
        try {
            backend = open(backendName, cli);
        } catch (CudaCallException | IllegalStateException e) {
            out.println("cuda guardian: cannot return tasks " + alive.stream().map(t -> t.pid()).toList() + ": " + e.getMessage());
            return 1;
        }
        int rc = 0;
        for (GuardianLauncher.GuardedTask t : alive) {
            try {
                CudaState now = backend.state(t.pid());
                List<CudaAction> steps = Transitions.returnSteps(t.initial(), now);
                for (CudaAction a : steps) {
                    if (a == CudaAction.RESTORE) {
                        backend.prepareRestore();
                        backend.restore(t.pid(), List.of());
                    } else {
                        backend.unlock(t.pid());
                    }
                }
                out.println("cuda guardian: pid " + t.pid() + " outlived criu; " + now.word() + " -> " + t.initial().word()
                        + (steps.isEmpty() ? " (nothing to do)" : " via " + steps.stream().map(s -> s.word).toList()));
            } catch (CudaCallException | IllegalStateException e) {
                out.println("cuda guardian: pid " + t.pid() + ": cannot return it to " + t.initial().word() + ": " + e.getMessage());
                rc = 1;
            }
        }
        return rc;
    }

    private static boolean survived(GuardianLauncher.GuardedTask t) {
        return Procs.stat(t.pid()).map(s -> s.alive() && s.startTime() == t.startTime()).orElse(false);
    }

    private static CudaBackend open(String name, Path cli) throws CudaCallException {
        if (name.equals("cli")) {
            if (cli == null) throw new IllegalStateException("--backend cli needs --cuda-checkpoint PATH");
            return CliBackend.open(cli);
        }
        DriverBackend.Probe probe = DriverBackend.probe();
        if (!probe.usable()) throw new IllegalStateException(probe.reason());
        return probe.backend();
    }
}

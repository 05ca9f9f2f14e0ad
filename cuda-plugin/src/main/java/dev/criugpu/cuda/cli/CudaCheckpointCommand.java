package dev.criugpu.cuda.cli;

import dev.criugpu.cuda.backend.BackendSelection;
import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.sys.DriverBackend;
import dev.criugpu.cuda.bindings.cuda_h;
import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.state.CudaAction;
import dev.criugpu.cuda.state.CudaState;

import java.io.PrintStream;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * {@code criu-gpu cuda ...}: the same options, output and exit status as NVIDIA's cuda-checkpoint, so scripts
 * written for it keep working. Prints the state word or the restore tid on stdout; a failed operation prints
 * {@code Could not <action> on process ID <pid>: "<driver message>"} on stderr and exits with the CUresult;
 * bad usage exits 1.
 */
public final class CudaCheckpointCommand {
    private CudaCheckpointCommand() {
    }

    static final String USAGE = """
            criu-gpu cuda: lock, checkpoint, restore and unlock the CUDA state of a process
            (options and output as NVIDIA's cuda-checkpoint).

            Operations (one per call):
              --get-state --pid PID            print running, locked, checkpointed or failed
              --get-restore-tid --pid PID      print the thread id of the process's CUDA restore thread
              --action ACTION --pid PID        ACTION is lock, checkpoint, restore or unlock
                  [--timeout MS]                 lock only: give up after MS milliseconds (0 = wait)
                  [--device-map OLD=NEW,...]     restore only: GPU UUID pairs, every checkpointed GPU listed
              --toggle --pid PID               running -> checkpointed, or checkpointed -> running

            Options:
              --pid|-p PID  --timeout|-t MS  --device-map|-d MAP  --help|-h

            Backend: the CUDA driver API (libcuda.so.1), or cuda-checkpoint when CRIU_CUDA_BACKEND=cli.
            """;

    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, System.getenv());
    }

    /** As {@link #run(String[], PrintStream, PrintStream)} with an explicit environment (backend choice, PATH). */
    public static int run(String[] args, PrintStream out, PrintStream err, Map<String, String> env) {
        CudaCheckpointInvocation inv;
        try {
            inv = CudaCheckpointInvocation.parse(args);
        } catch (CudaCheckpointInvocation.UsageException e) {
            err.println("criu-gpu cuda: " + e.getMessage() + " (see --help)");
            return 1;
        }
        if (inv.operation() == CudaCheckpointInvocation.Operation.HELP) {
            out.print(USAGE);
            return 0;
        }
        BackendSelection selection;
        try {
            selection = BackendSelection.choose(PluginConfig.load(env, null).backend(), DriverBackend::probe, env.get("PATH"));
        } catch (IllegalArgumentException e) {
            err.println("criu-gpu cuda: " + e.getMessage());
            return 1;
        }
        if (selection.chosen().isEmpty()) {
            err.println("criu-gpu cuda: " + selection.reason());
            return 1;
        }
        return execute(inv, selection.backend(), out, err);
    }

    static int execute(CudaCheckpointInvocation inv, CudaBackend backend, PrintStream out, PrintStream err) {
        int pid = inv.pid();
        String doing = "";
        try {
            switch (inv.operation()) {
                case GET_STATE -> {
                    doing = "get state of";
                    out.println(backend.state(pid).word());
                }
                case GET_RESTORE_TID -> {
                    doing = "get restore thread ID of";
                    OptionalInt tid = backend.restoreThread(pid);
                    if (tid.isEmpty()) {
                        throw new CudaCallException(cuda_h.CUDA_ERROR_INVALID_VALUE, "process has no CUDA restore thread");
                    }
                    out.println(tid.getAsInt());
                }
                case ACTION -> {
                    doing = inv.action().word;
                    perform(backend, inv.action(), pid, inv);
                }
                case TOGGLE -> {
                    return toggle(backend, pid, err);
                }
                default -> throw new IllegalStateException(inv.operation().toString());
            }
            return 0;
        } catch (CudaCallException e) {
            err.println("Could not " + doing + " on process ID " + pid + ": \"" + e.reason() + "\"");
            return exitStatus(e);
        }
    }

    private static void perform(CudaBackend backend, CudaAction action, int pid, CudaCheckpointInvocation inv)
            throws CudaCallException {
        switch (action) {
            case LOCK -> backend.lock(pid, inv.timeoutMs());
            case CHECKPOINT -> backend.checkpoint(pid);
            case RESTORE -> {
                backend.prepareRestore();
                backend.restore(pid, inv.deviceMap().entrySet().stream()
                        .map(e -> new GpuPair(e.getKey(), e.getValue())).toList());
            }
            case UNLOCK -> backend.unlock(pid);
        }
    }

    private static int toggle(CudaBackend backend, int pid, PrintStream err) {
        try {
            CudaState state = backend.state(pid);
            switch (state) {
                case RUNNING -> {
                    backend.lock(pid, 0);
                    backend.checkpoint(pid);
                }
                case CHECKPOINTED -> {
                    backend.prepareRestore();
                    backend.restore(pid, List.of());
                    backend.unlock(pid);
                }
                default -> throw new CudaCallException(cuda_h.CUDA_ERROR_ILLEGAL_STATE,
                        "process is " + state.word() + "; use --action");
            }
            return 0;
        } catch (CudaCallException e) {
            err.println("Error toggling CUDA in process ID " + pid + ": \"" + e.reason() + "\"");
            return exitStatus(e);
        }
    }

    private static int exitStatus(CudaCallException e) {
        return e.code() > 0 ? e.code() : 1;
    }
}

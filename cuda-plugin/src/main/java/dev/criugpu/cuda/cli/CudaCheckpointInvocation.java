package dev.criugpu.cuda.cli;

import dev.criugpu.cuda.gpu.DeviceMap;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.state.CudaAction;

import java.util.Map;

/** A parsed {@code criu-gpu cuda} command line (cuda-checkpoint's options). */
public record CudaCheckpointInvocation(Operation operation, CudaAction action, int pid, int timeoutMs,
                                       Map<GpuUuid, GpuUuid> deviceMap) {
    public enum Operation { HELP, GET_STATE, GET_RESTORE_TID, ACTION, TOGGLE }

    /** A command line that cannot be run; the message is the one line to print. */
    public static final class UsageException extends IllegalArgumentException {
        public UsageException(String message) {
            super(message);
        }
    }

    public static CudaCheckpointInvocation parse(String[] args) {
        Operation op = null;
        CudaAction action = null;
        Integer pid = null;
        Integer timeout = null;
        String map = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String name = a;
            String inline = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                inline = a.substring(eq + 1);
            }
            switch (name) {
                case "--help", "-h" -> op = set(op, Operation.HELP, a);
                case "--get-state" -> op = set(op, Operation.GET_STATE, a);
                case "--get-restore-tid" -> op = set(op, Operation.GET_RESTORE_TID, a);
                case "--toggle" -> op = set(op, Operation.TOGGLE, a);
                case "--action" -> {
                    op = set(op, Operation.ACTION, a);
                    String v = inline != null ? inline : value(args, i++, name);
                    try {
                        action = CudaAction.ofWord(v);
                    } catch (IllegalArgumentException e) {
                        throw new UsageException("--action: " + e.getMessage());
                    }
                }
                case "--pid", "-p" -> pid = number(inline != null ? inline : value(args, i++, name), name, 1);
                case "--timeout", "-t" -> timeout = number(inline != null ? inline : value(args, i++, name), name, 0);
                case "--device-map", "-d" -> map = inline != null ? inline : value(args, i++, name);
                default -> throw new UsageException("unknown option '" + a + "'");
            }
        }
        if (op == null) throw new UsageException("no operation given (one of --get-state, --get-restore-tid, --action, --toggle)");
        if (op == Operation.HELP) return new CudaCheckpointInvocation(op, null, 0, 0, Map.of());
        if (pid == null) throw new UsageException("--pid is required");
        if (timeout != null && action != CudaAction.LOCK) throw new UsageException("--timeout applies only to --action lock");
        if (map != null && action != CudaAction.RESTORE) throw new UsageException("--device-map applies only to --action restore");
        Map<GpuUuid, GpuUuid> deviceMap;
        try {
            deviceMap = DeviceMap.parse(map, "--device-map");
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
        return new CudaCheckpointInvocation(op, action, pid, timeout == null ? 0 : timeout, deviceMap);
    }

    private static Operation set(Operation current, Operation next, String arg) {
        if (current != null && current != next) throw new UsageException(arg + ": only one operation at a time");
        return next;
    }

    private static String value(String[] args, int i, String name) {
        if (i + 1 >= args.length) throw new UsageException(name + " needs a value");
        return args[i + 1];
    }

    private static int number(String v, String name, int min) {
        try {
            int n = Integer.parseInt(v.trim());
            if (n < min) throw new NumberFormatException();
            return n;
        } catch (NumberFormatException e) {
            throw new UsageException(name + " '" + v + "' is not a " + (min > 0 ? "positive" : "non-negative") + " number");
        }
    }
}

package dev.criugpu.cuda.agent;

import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.gpu.GpuUuid;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The lines criu's JVM and the CUDA agent exchange over their socketpair (the agent's end is its fd 3), one message per line, fields separated by
 * single spaces.
 * <pre>
 * agent → criu   ready NAME API REMAP(0|1) PID DESCRIPTION...  the backend is open (after criu's log line)
 *                unusable REASON...                          no backend could be opened
 *                ok ID [VALUE]                               call ID returned (VALUE: a tid, "none", a state word)
 *                err ID CODE MESSAGE...                      call ID failed with CUresult CODE
 * criu → agent   args --criu-start T --backend B ...         first line: the arguments its command line lacks
 *                                                            (the shim may start it first); numbers and
 *                                                            auto|driver|cli only, never a path
 *                log  (with an fd, SCM_RIGHTS)               next: the agent's log, a file criu's side created
 *                call ID OP PID [ARG]                        OP: restore-tid state lock(ARG ms) checkpoint
 *                                                            restore(ARG old=new,... or -) unlock prepare-restore
 *                task PID START STATE | returned PID | done  the watch (see AgentWatch)
 *                blocked PID TID MASK | unblocked PID TID    restore thread TID runs with our signals blocked (its
 *                                                            own mask: MASK, hex) / is stopped with MASK back
 * </pre>
 */
final class AgentProtocol {
    static final String NO_PAIRS = "-";
    static final String LOG = "log";
    static final String ARGS = "args";

    private AgentProtocol() {
    }

    static String pairs(List<GpuPair> pairs) {
        return pairs.isEmpty() ? NO_PAIRS : pairs.stream().map(GpuPair::toString).collect(Collectors.joining(","));
    }

    static List<GpuPair> parsePairs(String text) {
        List<GpuPair> out = new ArrayList<>();
        if (text.equals(NO_PAIRS)) return out;
        for (String p : text.split(",")) {
            String[] two = p.split("=");
            if (two.length != 2) throw new IllegalArgumentException("'" + p + "' is not old=new");
            out.add(new GpuPair(GpuUuid.parse(two[0]), GpuUuid.parse(two[1])));
        }
        return out;
    }

    /** The rest of the line from field {@code from} on (descriptions and messages hold spaces). */
    static String rest(String[] f, int from) {
        return from >= f.length ? "" : String.join(" ", List.of(f).subList(from, f.length));
    }
}

package dev.criugpu.cuda.agent;

import dev.criugpu.cuda.state.CudaState;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The lines criu's JVM and the CUDA agent exchange over their socketpair (the agent's end is its fd 3), one message per
 * line, fields separated by single spaces. Every line is a record here, written by {@link #encode(ToAgent)} /
 * {@link #encode(ToCriu)} and read by {@link #toAgent(String)} / {@link #toCriu(String)}; nothing else builds or
 * splits a line. The driver calls the agent makes for criu are declared once, as {@link AgentOp}s: criu's side encodes
 * a call and decodes its reply through its {@code AgentOp}, the agent dispatches it through the same {@code AgentOp}.
 * <pre>
 * agent → criu   ready name=N api=V remap=0|1 pid=P description=TEXT  the backend is open (after criu's log line)
 *                unusable REASON...                          no backend could be opened
 *                ok ID [VALUE]                               call ID returned (VALUE: the {@link AgentOp}'s reply)
 *                err ID CODE MESSAGE...                      call ID failed with CUresult CODE
 * criu → agent   args --criu-start T --backend B ...         first line: the arguments its command line lacks
 *                                                            (the shim may start it first); numbers and
 *                                                            auto|driver|cli only, never a path
 *                log  (with an fd, SCM_RIGHTS)               next: the agent's log, a file criu's side created
 *                call ID OP PID [ARG]                        OP: one of {@link AgentOp}
 *                task PID START STATE | returned PID | done  the watch (see AgentWatch)
 *                blocked PID TID MASK | unblocked PID TID    restore thread TID runs with our signals blocked (its
 *                                                            own mask: MASK, hex) / is stopped with MASK back
 * </pre>
 */
final class AgentProtocol {
    static final String LOG = "log";
    static final String ARGS = "args";

    private AgentProtocol() {
    }

    // ---- the lines criu's JVM sends

    /** A line criu's JVM sends the agent. */
    sealed interface ToAgent permits ArgsLine, LogLine, Call, WatchedTask, Returned, BlockedThread, Unblocked, Done {
    }

    /** The agent's arguments, the words {@link CudaAgent.Args#toArgv()} makes. */
    record ArgsLine(List<String> words) implements ToAgent {
        ArgsLine {
            words = List.copyOf(words);
        }
    }

    /** The agent's log, an fd that comes with the line. */
    record LogLine() implements ToAgent {
    }

    /** A driver call: {@code op} is an {@link AgentOp}'s word, {@code arg} its encoded argument or null. */
    record Call(long id, String op, int pid, String arg) implements ToAgent {
    }

    record Returned(int pid) implements ToAgent {
    }

    record Unblocked(int pid, int tid) implements ToAgent {
    }

    record Done() implements ToAgent {
    }

    static String encode(ToAgent m) {
        return switch (m) {
            case ArgsLine a -> ARGS + " " + String.join(" ", a.words());
            case LogLine l -> LOG;
            case Call c -> "call " + c.id() + " " + c.op() + " " + c.pid() + (c.arg() == null ? "" : " " + c.arg());
            case WatchedTask t -> "task " + t.pid() + " " + t.startTime() + " " + t.initial().word();
            case Returned r -> "returned " + r.pid();
            case BlockedThread b -> "blocked " + b.pid() + " " + b.tid() + " " + Long.toHexString(b.savedMask());
            case Unblocked u -> "unblocked " + u.pid() + " " + u.tid();
            case Done d -> "done";
        };
    }

    /** One of criu's lines; an {@link IllegalArgumentException} for anything that is not one. */
    static ToAgent toAgent(String line) {
        String[] f = line.trim().split(" ");
        return switch (f[0]) {
            case ARGS -> new ArgsLine(List.of(f).subList(1, f.length));
            case LOG -> {
                words(f, 1, 1, "log");
                yield new LogLine();
            }
            case "call" -> {
                words(f, 4, 5, "call ID OP PID [ARG]");
                yield new Call(Long.parseLong(f[1]), f[2], Integer.parseInt(f[3]), f.length > 4 ? f[4] : null);
            }
            case "task" -> {
                words(f, 4, 4, "task PID START STATE");
                CudaState s = CudaState.ofWord(f[3]).orElseThrow(() -> new IllegalArgumentException("unknown state " + f[3]));
                yield new WatchedTask(Integer.parseInt(f[1]), Long.parseLong(f[2]), s);
            }
            case "returned" -> new Returned(Integer.parseInt(words(f, 2, 2, "returned PID")[1]));
            case "blocked" -> {
                words(f, 4, 4, "blocked PID TID MASK");
                yield new BlockedThread(Integer.parseInt(f[1]), Integer.parseInt(f[2]), Long.parseUnsignedLong(f[3], 16));
            }
            case "unblocked" -> new Unblocked(Integer.parseInt(words(f, 3, 3, "unblocked PID TID")[1]), Integer.parseInt(f[2]));
            case "done" -> {
                words(f, 1, 1, "done");
                yield new Done();
            }
            default -> throw new IllegalArgumentException("not a line criu sends");
        };
    }

    // ---- the lines the agent sends

    /** A line the agent sends criu's JVM. */
    sealed interface ToCriu permits Ready, Unusable, Ok, Err {
    }

    /** The agent opened its backend: what criu's side tells of it ({@code pid}: the agent's). */
    record Ready(String name, int apiVersion, boolean remap, long pid, String description) implements ToCriu {
    }

    /** No backend could be opened. */
    record Unusable(String reason) implements ToCriu {
    }

    /** Call {@code id} returned; {@code value} is its {@link AgentOp}'s encoded reply, or null. */
    record Ok(long id, String value) implements ToCriu {
    }

    /** Call {@code id} failed with CUresult {@code code}. */
    record Err(long id, int code, String message) implements ToCriu {
    }

    private static final List<String> READY_FIELDS = List.of("name", "api", "remap", "pid", "description");

    static String encode(ToCriu m) {
        return switch (m) {
            case Ready r -> "ready name=" + r.name() + " api=" + r.apiVersion() + " remap=" + (r.remap() ? 1 : 0)
                    + " pid=" + r.pid() + " description=" + oneLine(r.description());
            case Unusable u -> "unusable " + oneLine(u.reason());
            case Ok o -> "ok " + o.id() + (o.value() == null ? "" : " " + o.value());
            case Err e -> "err " + e.id() + " " + e.code() + " " + oneLine(e.message());
        };
    }

    /** One of the agent's lines; an {@link IllegalArgumentException} for anything that is not one. */
    static ToCriu toCriu(String line) {
        String word = line.split(" ", 2)[0];
        return switch (word) {
            case "ready" -> {
                // the description holds spaces: it is the last field and takes the rest of the line
                String[] f = line.split(" ", READY_FIELDS.size() + 1);
                Map<String, String> named = new LinkedHashMap<>();
                for (int i = 1; i < f.length; i++) {
                    String[] kv = f[i].split("=", 2);
                    if (kv.length != 2 || !READY_FIELDS.get(i - 1).equals(kv[0])) break;
                    named.put(kv[0], kv[1]);
                }
                if (!named.keySet().equals(new java.util.HashSet<>(READY_FIELDS))) {
                    throw new IllegalArgumentException("not 'ready name=N api=V remap=0|1 pid=P description=TEXT'");
                }
                yield new Ready(named.get("name"), Integer.parseInt(named.get("api")), named.get("remap").equals("1"),
                        Long.parseLong(named.get("pid")), named.get("description"));
            }
            case "unusable" -> new Unusable(rest(line, 1));
            case "ok" -> {
                String[] f = line.split(" ", 3);
                yield new Ok(Long.parseLong(words(f, 2, 3, "ok ID [VALUE]")[1]), f.length > 2 ? f[2] : null);
            }
            case "err" -> {
                String[] f = line.split(" ", 4);
                words(f, 3, 4, "err ID CODE MESSAGE");
                yield new Err(Long.parseLong(f[1]), Integer.parseInt(f[2]), f.length > 3 ? f[3] : "");
            }
            default -> throw new IllegalArgumentException("not a line the agent sends");
        };
    }

    // ---- fields

    /** A line break in a message would end the line early and make its rest a line of its own. */
    static String oneLine(String text) {
        return text.replace("\r\n", " ").replace('\n', ' ').replace('\r', ' ');
    }

    /** {@code f} when it holds {@code min} to {@code max} words. */
    private static String[] words(String[] f, int min, int max, String form) {
        if (f.length < min || f.length > max) throw new IllegalArgumentException("not '" + form + "'");
        return f;
    }

    /** The line from its word {@code from} on (reasons and messages hold spaces). */
    private static String rest(String line, int from) {
        String[] f = line.split(" ", from + 1);
        return f.length > from ? f[from] : "";
    }
}

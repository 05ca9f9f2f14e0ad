package dev.criugpu.cuda.config;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * The few criu options the plugin must know, read from criu's own argv ({@code /proc/self/cmdline}) because criu
 * does not export its options to plugins. Follows criu's getopt_long conventions: short options may be clustered
 * ({@code -vR}); {@code t D o r J W L M} take an argument (attached or next); long options may be written
 * {@code --name=value} or {@code --name value} and abbreviated to an unambiguous prefix of the names we track.
 *
 * <p>criu's config files count as criu counts them ({@link #withConfigFiles}). Under RPC ({@code criu swrk},
 * {@code criu service}) the options travel over a socket and are unknown here: {@link #rpc()} is true and the
 * defaults apply.
 */
public record CriuCommandLine(boolean rpc, boolean leaveRunning, boolean leaveStopped, OptionalInt timeoutSeconds,
                              OptionalInt tree, Optional<Path> joinNetNs) {
    /** criu's default for --timeout (seconds). */
    public static final int DEFAULT_TIMEOUT_SECONDS = 10;

    private static final String SHORT_WITH_ARG = "tDorJWLM";
    private static final List<String> TRACKED_LONG = List.of("leave-running", "leave-stopped", "timeout", "tree", "join-ns");
    /** criu long options with a required argument, so their value is not mistaken for an option. */
    private static final Set<String> LONG_WITH_ARG = Set.of("tree", "images-dir", "work-dir", "log-file", "timeout",
            "root", "pidfile", "action-script", "ext-mount-map", "external", "inherit-fd", "cgroup-root",
            "freeze-cgroup", "page-server", "address", "port", "lib", "config", "lsm-profile", "lsm-mount-context",
            "cgroup-props", "cgroup-props-file", "cgroup-dump-controller", "manage-cgroups", "veth-pair",
            "status-fd", "prev-images-dir", "ps-socket", "network-lock", "join-ns", "irmap-scan-path",
            "cpu-cap", "empty-ns", "file-validation", "external-mount", "enable-fs", "cgroup-yard");

    /** The timeout criu uses (seconds): --timeout if given, else the default. 0 means criu's "no limit". */
    public int timeoutOrDefault() {
        return timeoutSeconds.orElse(DEFAULT_TIMEOUT_SECONDS);
    }

    /**
     * How long the dump may spend locking CUDA tasks, in milliseconds: {@link #lockBudgetMs(int)} of
     * {@link #timeoutOrDefault()}.
     */
    public int lockBudgetMs() {
        return lockBudgetMs(timeoutOrDefault());
    }

    /**
     * The lock budget (ms, 1 to {@link Integer#MAX_VALUE}) for criu's {@code --timeout} of {@code timeoutSeconds}.
     * <p>
     * criu 4.2.1 arms {@code alarm(opts.timeout)} once, when it starts to seize the tree ({@code collect_pstree}), and
     * disarms it when the whole tree is seized: the one alarm covers the PAUSE_DEVICES of the root (where the plugin
     * locks the job's tasks), seizing every task and thread, the other tasks' PAUSE_DEVICES and the freezer's wait.
     * Once it has fired, criu fails the dump at the next task it collects ({@code alarm_timeouted}). A lock that takes
     * the whole timeout and succeeds is therefore followed by criu's own timeout: the locks get half, and criu keeps
     * the other half for its seize.
     * <p>
     * {@code --timeout 0} makes criu arm no alarm at all ({@code alarm(0)}) and wait at least 10 s for a freezer
     * cgroup ({@code freeze_processes}); a driver lock with no bound could hold criu forever, so the locks get those
     * 10 s ({@link #DEFAULT_TIMEOUT_SECONDS}), nothing of criu's competing with them. Computed in {@code long}: no
     * overflow for any {@code int} (criu's own {@code unsigned int} seconds), clamped to an {@code int} of ms (24.8 days)
     * as the driver's and cuda-checkpoint's lock timeouts are 32-bit.
     *
     * @throws IllegalArgumentException for a negative value (which {@link #parse} never returns)
     */
    public static int lockBudgetMs(int timeoutSeconds) {
        if (timeoutSeconds < 0) throw new IllegalArgumentException("criu --timeout " + timeoutSeconds + " is negative");
        long ms = timeoutSeconds == 0 ? DEFAULT_TIMEOUT_SECONDS * 1000L : timeoutSeconds * 1000L / 2;
        return (int) Math.min(Integer.MAX_VALUE, Math.max(1, ms));
    }

    /** Whether criu keeps the tree alive after a successful dump (-R or -s). */
    public boolean treeSurvivesDump() {
        return leaveRunning || leaveStopped;
    }

    /** No option known: criu's defaults. */
    public static final CriuCommandLine UNKNOWN = new CriuCommandLine(false, false, false, OptionalInt.empty(),
            OptionalInt.empty(), Optional.empty());

    /** criu's global config file (criu/Makefile: GLOBAL_CONFIG_DIR DEFAULT_CONFIG_FILENAME). */
    public static final Path GLOBAL_CONFIG = Path.of("/etc/criu/default.conf");
    /** A config file larger than this is not read (criu reads it whole; the plugin only needs a few options). */
    static final int CONFIG_LIMIT = 1 << 20;

    public static CriuCommandLine ofSelf() {
        try {
            List<String> argv = dev.criugpu.api.sys.CriuArgv.withoutLoader(split(Files.readAllBytes(Path.of("/proc/self/cmdline"))));
            CriuCommandLine own = parse(argv);
            // under RPC each request brings its options (and its config file) over the socket
            return own.rpc() ? own : parse(withConfigFiles(argv, System.getenv(), GLOBAL_CONFIG));
        } catch (IOException e) {
            return UNKNOWN;
        }
    }

    /**
     * argv as criu's getopt sees it: the options of its config files first, in criu's order (config.c next_config:
     * the global file and $HOME/.criu/default.conf unless argv has --no-default-config or --config, then
     * $CRIU_CONFIG_FILE, then --config FILE), then argv itself, whose options come last and so win. A file that is
     * missing or unreadable is skipped, as criu skips it.
     */
    public static List<String> withConfigFiles(List<String> argv, java.util.Map<String, String> env, Path globalConfig) {
        boolean noDefaults = false;
        String cfgFile = null;
        for (int i = 0; i < argv.size(); i++) {
            String a = argv.get(i);
            if (a.equals("--no-default-config")) noDefaults = true;
            if (a.equals("--config") && i + 1 < argv.size()) {
                cfgFile = argv.get(i + 1);
                noDefaults = true;
            } else if (a.startsWith("--config=")) {
                cfgFile = a.substring("--config=".length());
                noDefaults = true;
            }
        }
        List<Path> files = new ArrayList<>();
        if (!noDefaults) {
            files.add(globalConfig);
            String home = env.get("HOME");
            if (home != null) files.add(Path.of(home, ".criu", "default.conf"));
        }
        if (env.get("CRIU_CONFIG_FILE") != null) files.add(Path.of(env.get("CRIU_CONFIG_FILE")));
        if (cfgFile != null) files.add(Path.of(cfgFile));
        List<String> out = new ArrayList<>();
        out.add(argv.isEmpty() ? "criu" : argv.getFirst());
        for (Path f : files) out.addAll(configOptions(f));
        if (argv.size() > 1) out.addAll(argv.subList(1, argv.size()));
        return out;
    }

    /**
     * The options of one criu config file as argv words: each line {@code name [value]} becomes {@code --name} and
     * its value (a {@code "quoted"} value may hold spaces); {@code #} starts a comment.
     */
    static List<String> configOptions(Path file) {
        List<String> words = new ArrayList<>();
        byte[] bytes;
        try {
            if (!Files.isRegularFile(file) || Files.size(file) > CONFIG_LIMIT) return words;
            bytes = Files.readAllBytes(file);
        } catch (IOException | SecurityException e) {
            return words;
        }
        for (String raw : new String(bytes, StandardCharsets.UTF_8).split("\n")) {
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#")) continue;
            int sp = indexOfBlank(line);
            if (sp < 0) {
                words.add("--" + line);
                continue;
            }
            words.add("--" + line.substring(0, sp));
            String rest = line.substring(sp).strip();
            if (rest.isEmpty() || rest.startsWith("#")) continue;
            if (rest.startsWith("\"")) {
                int end = rest.indexOf('"', 1);
                while (end > 0 && rest.charAt(end - 1) == '\\') end = rest.indexOf('"', end + 1);
                words.add((end < 0 ? rest.substring(1) : rest.substring(1, end)).replace("\\\"", "\""));
            } else {
                int end = indexOfBlank(rest);
                String value = end < 0 ? rest : rest.substring(0, end);
                int hash = value.indexOf('#');
                words.add(hash >= 0 ? value.substring(0, hash) : value);
            }
        }
        return words;
    }

    private static int indexOfBlank(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) == ' ' || s.charAt(i) == '\t') return i;
        }
        return -1;
    }

    /** {@link #ofSelf}, or criu's defaults where its argv does not parse (init says why). */
    public static CriuCommandLine ofSelfOrDefault() {
        try {
            return ofSelf();
        } catch (IllegalArgumentException e) {
            return UNKNOWN;
        }
    }

    /** argv from the NUL-separated bytes of /proc/PID/cmdline. */
    public static List<String> split(byte[] cmdline) {
        List<String> args = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < cmdline.length; i++) {
            if (cmdline[i] == 0) {
                args.add(new String(cmdline, start, i - start, StandardCharsets.UTF_8));
                start = i + 1;
            }
        }
        if (start < cmdline.length) args.add(new String(cmdline, start, cmdline.length - start, StandardCharsets.UTF_8));
        return args;
    }

    /**
     * Parses criu's argv (argv[0] included).
     *
     * @throws IllegalArgumentException for a --timeout that is not a non-negative number, naming it
     */
    public static CriuCommandLine parse(List<String> argv) {
        boolean leaveRunning = false;
        boolean leaveStopped = false;
        OptionalInt timeout = OptionalInt.empty();
        OptionalInt tree = OptionalInt.empty();
        Optional<Path> joinNetNs = Optional.empty();
        String command = null;
        for (int i = 1; i < argv.size(); i++) {
            String a = argv.get(i);
            if (a.equals("--")) break;
            if (a.startsWith("--")) {
                String name = a.substring(2);
                String value = null;
                int eq = name.indexOf('=');
                if (eq >= 0) {
                    value = name.substring(eq + 1);
                    name = name.substring(0, eq);
                }
                String tracked = expand(name);
                boolean takesArg = LONG_WITH_ARG.contains(tracked == null ? name : tracked);
                if (takesArg && value == null && i + 1 < argv.size()) value = argv.get(++i);
                if (tracked == null) continue;
                switch (tracked) {
                    case "leave-running" -> leaveRunning = true;
                    case "leave-stopped" -> leaveStopped = true;
                    case "timeout" -> timeout = OptionalInt.of(seconds(value));
                    case "tree" -> tree = pid(value);
                    case "join-ns" -> {
                        if (netNamespace(value).isPresent()) joinNetNs = netNamespace(value);
                    }
                    default -> { }
                }
            } else if (a.startsWith("-") && a.length() > 1) {
                for (int c = 1; c < a.length(); c++) {
                    char o = a.charAt(c);
                    if (o == 'v' || o == 'x') break; // optional argument, attached: the rest of the cluster
                    if (SHORT_WITH_ARG.indexOf(o) >= 0) {
                        String value = c + 1 < a.length() ? a.substring(c + 1) : i + 1 < argv.size() ? argv.get(i + 1) : null;
                        if (c + 1 == a.length()) i++; // the argument is the next word
                        if (o == 't') tree = pid(value);
                        if (o == 'J' && netNamespace(value).isPresent()) joinNetNs = netNamespace(value);
                        break;
                    }
                    if (o == 'R') leaveRunning = true;
                    if (o == 's') leaveStopped = true;
                }
            } else if (command == null) {
                command = a;
            }
        }
        boolean rpc = "swrk".equals(command) || "service".equals(command) || dev.criugpu.api.sys.CriuArgv.rpcWorker(argv);
        return new CriuCommandLine(rpc, leaveRunning, leaveStopped, timeout, tree, joinNetNs);
    }

    /** The tracked long option {@code name} stands for (exact or unambiguous prefix), or null. */
    private static String expand(String name) {
        if (TRACKED_LONG.contains(name)) return name;
        List<String> hits = TRACKED_LONG.stream().filter(t -> t.startsWith(name)).toList();
        return hits.size() == 1 && name.length() >= 3 ? hits.getFirst() : null;
    }

    /**
     * The network namespace of a {@code --join-ns NS:{PID|FILE}[,OPTIONS]} value whose NS is "net": /proc/PID/ns/net
     * or the file; empty for other namespaces and for values criu itself refuses.
     */
    private static Optional<Path> netNamespace(String value) {
        if (value == null || !value.startsWith("net:")) return Optional.empty();
        String target = value.substring(4);
        int comma = target.indexOf(',');
        if (comma >= 0) target = target.substring(0, comma);
        if (target.isEmpty()) return Optional.empty();
        if (target.startsWith("/")) return Optional.of(Path.of(target));
        OptionalInt pid = pid(target);
        return pid.isPresent() ? Optional.of(Path.of("/proc", Integer.toString(pid.getAsInt()), "ns", "net")) : Optional.empty();
    }

    /** The pid of -t/--tree; empty where it is not a positive number (criu itself then refuses the command). */
    private static OptionalInt pid(String value) {
        try {
            int pid = Integer.parseInt(value == null ? "" : value.trim());
            return pid > 0 ? OptionalInt.of(pid) : OptionalInt.empty();
        } catch (NumberFormatException e) {
            return OptionalInt.empty();
        }
    }

    private static int seconds(String value) {
        if (value == null) throw new IllegalArgumentException("criu --timeout has no value");
        try {
            int s = Integer.parseInt(value.trim());
            if (s < 0) throw new NumberFormatException();
            return s;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("criu --timeout '" + value + "' is not a number of seconds");
        }
    }
}

package dev.criugpu.cuda.config;

import dev.criugpu.api.sys.CriuArgv;
import dev.criugpu.api.sys.CriuGetopt;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The few criu options the plugin must know, read from criu's own argv ({@code /proc/self/cmdline}) and config files
 * because criu does not export its options to plugins. They are read as criu reads them: each config file, then argv,
 * through getopt_long with criu's option table ({@link CriuGetopt}), later values winning. Under RPC ({@code criu swrk},
 * {@code criu service}) the options travel over a socket and are unknown here: {@link #rpc()} is true and the defaults
 * apply.
 *
 * @param afterDump what the options say criu does with the tree after a successful dump
 * @param doubt why the options may not be what criu read (an option criu does not know, a config file not read): set,
 *              the tree is taken to survive the dump ({@link #treeSurvivesDump})
 */
public record CriuCommandLine(boolean rpc, AfterDump afterDump, OptionalInt timeoutSeconds, OptionalInt tree,
                              Optional<Path> joinNetNs, Optional<String> doubt) {
    /** criu's default for --timeout (seconds). */
    public static final int DEFAULT_TIMEOUT_SECONDS = 10;

    /** criu's opts.final_state: the tree killed (criu's default), left running ({@code -R}) or stopped ({@code -s}). */
    public enum AfterDump { KILLED, RUNNING, STOPPED }

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

    /**
     * Whether criu keeps the tree alive after a successful dump (-R or -s), or may: the plugin's exit then returns every
     * task it touched inside criu, before criu lets the tree go, and fails criu's exit status when one cannot be
     * returned (DumpEnding.RESTORE_NOW). That is the safe guess where criu's options are in doubt: should criu kill the
     * tree instead, the return cost only its time, the images being complete. The other guess, for a tree that lives on,
     * would leave it running with its CUDA tasks checkpointed until criu is gone and the agent, if there is one,
     * returns them, criu's exit status saying nothing.
     */
    public boolean treeSurvivesDump() {
        return doubt.isPresent() || afterDump != AfterDump.KILLED;
    }

    /** Nothing known of criu's options: its defaults, the tree taken to survive. */
    public static final CriuCommandLine UNKNOWN = new CriuCommandLine(false, AfterDump.KILLED, OptionalInt.empty(),
            OptionalInt.empty(), Optional.empty(), Optional.of("criu's command line could not be read"));

    /** criu's global config file (criu/Makefile: GLOBAL_CONFIG_DIR DEFAULT_CONFIG_FILENAME). */
    public static final Path GLOBAL_CONFIG = Path.of("/etc/criu/default.conf");

    public static CriuCommandLine ofSelf() {
        try {
            List<String> argv = CriuArgv.withoutLoader(split(Files.readAllBytes(Path.of("/proc/self/cmdline"))));
            // under RPC each request brings its options (and its config file) over the socket
            return CriuArgv.rpcWorker(argv) ? parse(argv) : parse(argv, System.getenv(), GLOBAL_CONFIG);
        } catch (IOException e) {
            return UNKNOWN;
        }
    }

    /**
     * criu's options from its config files and {@code argv}, in criu's order (config.c next_config): the global file
     * and $HOME/.criu/default.conf unless argv has --no-default-config or --config, then $CRIU_CONFIG_FILE, then
     * --config FILE, then argv, each read on its own. A file that does not exist is skipped, as criu skips it.
     */
    public static CriuCommandLine parse(List<String> argv, Map<String, String> env, Path globalConfig) {
        Reading r = new Reading();
        for (Path f : configFiles(argv, env, globalConfig)) {
            Optional<List<String>> words = CriuConfigFile.words(f);
            if (words.isPresent()) {
                r.read(words.get());
            } else {
                r.doubt("criu's config file " + f + " could not be read as criu reads it");
            }
        }
        // glibc's getopt stops at the first operand then, so criu dump -R would not see -R
        if (env.containsKey("POSIXLY_CORRECT")) r.doubt("POSIXLY_CORRECT is set");
        return r.lastArgv(argv);
    }

    /** {@code argv} alone (argv[0] included), without config files. */
    public static CriuCommandLine parse(List<String> argv) {
        return new Reading().lastArgv(argv);
    }

    /**
     * The config files criu reads for {@code argv}, in its order. criu looks for --config and --no-default-config in
     * every word of argv before parsing it (pre_parse: exactly "--config" and its next word, or a word containing
     * "--config=", from its tenth character), so an abbreviation such as --conf names no file.
     */
    static List<Path> configFiles(List<String> argv, Map<String, String> env, Path globalConfig) {
        boolean noDefaults = false;
        String given = null;
        for (int i = 0; i < argv.size(); i++) {
            String a = argv.get(i);
            if (a.equals("--no-default-config")) {
                noDefaults = true;
            } else if (a.equals("--config")) {
                given = i + 1 < argv.size() ? argv.get(i + 1) : null;
                noDefaults = true;
            } else if (a.contains("--config=")) {
                given = a.substring("--config=".length());
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
        if (given != null) files.add(Path.of(given));
        return files;
    }

    /** What the options read so far set, each source's words read on their own as criu's getopt_long reads them. */
    private static final class Reading {
        AfterDump afterDump = AfterDump.KILLED;
        OptionalInt timeout = OptionalInt.empty();
        OptionalInt tree = OptionalInt.empty();
        Optional<Path> joinNetNs = Optional.empty();
        Optional<String> doubt = Optional.empty();

        void doubt(String why) {
            if (doubt.isEmpty()) doubt = Optional.of(why);
        }

        void read(List<String> words) {
            CriuGetopt.Reading r = CriuGetopt.read(words);
            r.refused().ifPresent(w -> doubt("criu's option " + w + " is not one criu 4.2 takes as written"));
            for (CriuGetopt.Option o : r.options()) {
                switch (o.name()) {
                    case "leave-running" -> afterDump = AfterDump.RUNNING;
                    case "leave-stopped" -> afterDump = AfterDump.STOPPED;
                    case "timeout" -> timeout = OptionalInt.of(seconds(o.value()));
                    case "tree" -> tree = pid(o.value());
                    case "join-ns" -> netNamespace(o.value()).ifPresent(ns -> joinNetNs = Optional.of(ns));
                    default -> { }
                }
            }
        }

        /** Reads criu's argv (argv[0] included), the last source, and gives what all of them set. */
        CriuCommandLine lastArgv(List<String> argv) {
            read(argv.subList(Math.min(1, argv.size()), argv.size()));
            return new CriuCommandLine(CriuArgv.rpcWorker(argv), afterDump, timeout, tree, joinNetNs, doubt);
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

    /** The pid of -t/--tree; empty where criu's atoi gives no positive number (criu itself then refuses the command). */
    private static OptionalInt pid(String value) {
        long pid = atoi(value);
        return pid > 0 && pid <= Integer.MAX_VALUE ? OptionalInt.of((int) pid) : OptionalInt.empty();
    }

    /**
     * --timeout as criu takes it: atoi into an unsigned int, so a word that is no number is 0 (no alarm) and a
     * negative one wraps to a time beyond any lock (here {@link Integer#MAX_VALUE}).
     */
    private static int seconds(String value) {
        long s = atoi(value);
        return s < 0 ? Integer.MAX_VALUE : (int) Math.min(s, Integer.MAX_VALUE);
    }

    /** C's atoi: blanks, a sign, then digits as far as they go; 0 where there are none (kept within a long). */
    private static long atoi(String value) {
        if (value == null) return 0;
        int i = 0;
        while (i < value.length() && Character.isWhitespace(value.charAt(i))) i++;
        boolean negative = i < value.length() && value.charAt(i) == '-';
        if (i < value.length() && (value.charAt(i) == '-' || value.charAt(i) == '+')) i++;
        long n = 0;
        for (; i < value.length() && value.charAt(i) >= '0' && value.charAt(i) <= '9' && n < (1L << 40); i++) {
            n = n * 10 + (value.charAt(i) - '0');
        }
        return negative ? -n : n;
    }
}

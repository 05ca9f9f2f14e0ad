package dev.criugpu.api.sys;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * criu's options as criu 4.2 declares them to getopt_long ({@code short_opts} and {@code long_opts} in
 * {@code parse_options}, criu/config.c; unchanged in criu-dev), and how glibc's getopt_long reads a list of words by
 * them: options may follow operands (glibc permutes), {@code --} ends the options, a long option may be abbreviated to
 * a prefix that names one option, a required value is attached ({@code --tree=7}, {@code -t7}) or the next word
 * whatever it looks like, and an optional value only attached ({@code --manage-cgroups=full}, {@code -v4}): the word
 * after an option with an optional value is read on its own.
 */
public final class CriuGetopt {
    /** getopt_long's no_argument, required_argument, optional_argument. */
    public enum Arg { NONE, REQUIRED, OPTIONAL }

    /** criu's short_opts: a letter followed by ':' takes a value, by "::" an optional one. */
    static final String SHORT_OPTS = "dSsRt:hD:o:v::x::Vr:jJ:lW:L:M:";

    /** The long option each letter means: the one with the same val in long_opts, or (d S j l) the same field. */
    static final Map<Character, String> SHORT_NAMES = Map.ofEntries(Map.entry('d', "restore-detached"),
            Map.entry('S', "restore-sibling"), Map.entry('s', "leave-stopped"), Map.entry('R', "leave-running"),
            Map.entry('t', "tree"), Map.entry('h', "help"), Map.entry('D', "images-dir"), Map.entry('o', "log-file"),
            Map.entry('v', "verbosity"), Map.entry('x', "ext-unix-sk"), Map.entry('V', "version"), Map.entry('r', "root"),
            Map.entry('j', "shell-job"), Map.entry('J', "join-ns"), Map.entry('l', "file-locks"), Map.entry('W', "work-dir"),
            Map.entry('L', "libdir"), Map.entry('M', "ext-mount-map"));

    /** criu 4.2's long_opts, each name once; BOOL_OPT(name) declares name and no-name, both without a value. */
    static final Map<String, Arg> LONG_OPTS = longOpts(
            "tree images-dir work-dir log-file join-ns root close pidfile veth-pair action-script address port "
                    + "prev-images-dir libdir ext-mount-map cgroup-root inherit-fd feature skip-mnt enable-fs "
                    + "freeze-cgroup ghost-limit irmap-scan-path lsm-profile timeout external empty-ns cgroup-props "
                    + "cgroup-props-file cgroup-dump-controller status-fd ps-socket config tls-cacert tls-cacrl tls-cert "
                    + "tls-key cgroup-yard pre-dump-mode file-validation lsm-mount-context network-lock",
            "ext-unix-sk cpu-cap manage-cgroups verbosity",
            "leave-stopped leave-running help version ms exec-cmd enable-external-sharing enable-external-masters "
                    + "lazy-pages all no-default-config tls-no-cn-verify",
            "restore-detached restore-sibling daemon tcp-established log-pid evasive-devices link-remap shell-job "
                    + "file-locks page-server track-mem auto-dedup force-irmap extra experimental skip-in-flight "
                    + "deprecated display-stats weak-sysctls tcp-close stream tls skip-file-rwx-check mntns-compat-mode "
                    + "unprivileged ghost-fiemap allow-uprobes");

    private CriuGetopt() {
    }

    private static Map<String, Arg> longOpts(String required, String optional, String none, String bools) {
        Map<String, Arg> t = new HashMap<>();
        for (String n : required.split(" ")) t.put(n, Arg.REQUIRED);
        for (String n : optional.split(" ")) t.put(n, Arg.OPTIONAL);
        for (String n : none.split(" ")) t.put(n, Arg.NONE);
        for (String n : bools.split(" ")) {
            t.put(n, Arg.NONE);
            t.put("no-" + n, Arg.NONE);
        }
        return Map.copyOf(t);
    }

    /** One option as getopt_long gives it to criu: by its long name, with its value or null. */
    public record Option(String name, String value) {
    }

    /**
     * What getopt_long makes of some words.
     *
     * @param options the options, in order
     * @param operands the words that are neither options nor their values, in order
     * @param refused why criu would stop with a usage error at a word (unknown or ambiguous option, a value missing or
     *                not allowed); the words after it are not read
     */
    public record Reading(List<Option> options, List<String> operands, Optional<String> refused) {
        public Reading {
            options = List.copyOf(options);
            operands = List.copyOf(operands);
        }
    }

    /** Reads {@code words} (an argv without argv[0], or a config file's words) as criu's getopt_long does. */
    public static Reading read(List<String> words) {
        List<Option> options = new ArrayList<>();
        List<String> operands = new ArrayList<>();
        for (int i = 0; i < words.size(); i++) {
            String w = words.get(i);
            String next = i + 1 < words.size() ? words.get(i + 1) : null;
            if (w.equals("--")) {
                operands.addAll(words.subList(i + 1, words.size()));
                break;
            }
            int used;
            if (w.startsWith("--")) {
                used = readLong(w.substring(2), next, options);
            } else if (w.startsWith("-") && w.length() > 1) {
                used = readShort(w.substring(1), next, options);
            } else {
                operands.add(w);
                continue;
            }
            if (used < 0) return new Reading(options, operands, Optional.of(w));
            i += used;
        }
        return new Reading(options, operands, Optional.empty());
    }

    /** The words after this one it took (0 or 1), or -1 where getopt_long reports an error. */
    private static int readLong(String text, String next, List<Option> out) {
        int eq = text.indexOf('=');
        String given = eq < 0 ? text : text.substring(0, eq);
        Optional<String> name = longName(given);
        if (name.isEmpty()) return -1;
        Arg arg = LONG_OPTS.get(name.get());
        if (eq >= 0) {
            if (arg == Arg.NONE) return -1;
            out.add(new Option(name.get(), text.substring(eq + 1)));
            return 0;
        }
        if (arg != Arg.REQUIRED) {
            out.add(new Option(name.get(), null));
            return 0;
        }
        if (next == null) return -1;
        out.add(new Option(name.get(), next));
        return 1;
    }

    /** The option {@code given} names: itself, or the one option it is a prefix of. */
    private static Optional<String> longName(String given) {
        if (LONG_OPTS.containsKey(given)) return Optional.of(given);
        List<String> hits = LONG_OPTS.keySet().stream().filter(n -> n.startsWith(given)).toList();
        return hits.size() == 1 ? Optional.of(hits.getFirst()) : Optional.empty();
    }

    /** A cluster of letters ({@code -Rt7}); as {@link #readLong}. */
    private static int readShort(String cluster, String next, List<Option> out) {
        for (int c = 0; c < cluster.length(); c++) {
            char letter = cluster.charAt(c);
            int at = letter == ':' ? -1 : SHORT_OPTS.indexOf(letter);
            if (at < 0) return -1;
            String name = SHORT_NAMES.get(letter);
            String rest = cluster.substring(c + 1);
            boolean takes = at + 1 < SHORT_OPTS.length() && SHORT_OPTS.charAt(at + 1) == ':';
            boolean optional = takes && at + 2 < SHORT_OPTS.length() && SHORT_OPTS.charAt(at + 2) == ':';
            if (!takes) {
                out.add(new Option(name, null));
            } else if (!rest.isEmpty()) {
                out.add(new Option(name, rest));
                return 0;
            } else if (optional) {
                out.add(new Option(name, null));
                return 0;
            } else if (next == null) {
                return -1;
            } else {
                out.add(new Option(name, next));
                return 1;
            }
        }
        return 0;
    }
}

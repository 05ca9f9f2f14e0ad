package dev.criugpu.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Issue 33: tests of CRIU's own suite zdtm (Debian's criu 4.2.1 source, built into the zdtm image) run against
 * Debian's criu 4.2.1 with our plugin dir installed as criu's default plugin dir /usr/lib/criu, in three modes:
 * {@code none} (no plugins), {@code loaded} (ours, which disable themselves without a GPU) and {@code forced}
 * (CRIU_GPU_PLUGIN_FORCE=1: the JVM starts inside criu, as on every GPU host). A test that passes without plugins
 * must pass with them. A criu that hangs is killed after {@link #CRIU_TIMEOUT_S} and its test fails, named with its
 * mode, flavour and repetition and the tail of criu's log. The forced ns runs are repeated, so that a hang rate of
 * 5 % shows. integration-tests/zdtm/run-zdtm.sh does one run in the container.
 */
@ExtendWith(DockerRequired.class)
class ZdtmIT {
    /**
     * zdtm/static tests that pass here without plugins; zdtm itself skips a test whose flavours exclude the one run
     * (session00, shm, mntns_open, ipc_namespace only under ns; socket-tcp only under h). 35 keep the whole test
     * under 8 minutes on 2 cores. Not here: pid00, thread_different_uid_gid and seccomp_filter (they need
     * CAP_SYS_RESOURCE, which this sandbox lacks).
     */
    static final List<String> TESTS = List.of(
            "socket_listen", "socket_udp", "socket_queues", "sk-netlink", "sock_opts00", "sk-unix-dgram-ghost",
            "packet_sock", "sockets00", "socket-tcp",
            "file_shared", "inotify00", "fanotify00", "eventfs00", "epoll", "cwd00", "pipe00",
            "sigpending", "futex-rl", "pthread00", "timers", "posix_timers", "file_locks00",
            "session00", "maps00", "maps01", "shm", "vdso01", "fpu00", "env00", "zombie00", "rlimits00", "caps00",
            "chroot", "mntns_open", "ipc_namespace");
    /** zdtm's flavours: h (criu's host namespaces), ns (the test in its own namespaces). uns works too, see docs/testing.md. */
    static final List<String> FLAVOURS = List.of(
            System.getProperty("criugpu.zdtm.flavours", "h,ns").split(","));
    /** How many times the forced ns runs go over the whole list. */
    static final int FORCED_NS_REPETITIONS = 5;
    /** Tests zdtm runs side by side (2 cores: more is not faster). */
    static final int PARALLEL = 2;
    /** A criu dump or restore still running after this long hangs (a forced one takes ~1 s here). */
    static final int CRIU_TIMEOUT_S = 20;

    /** A whole run-zdtm.sh run: its own `timeout 1800` ends it first, with zdtm's report; this one if even that hangs. */
    private static final ExecBound RUN_BOUND = ExecBound.of(java.time.Duration.ofSeconds(1800 + 120));

    private static final String ZDTM = "/zdtm/criu-4.2.1/test";
    private static final String RUNNER = "/opt/run-zdtm.sh";
    private static final Pattern TAP =
            Pattern.compile("^(not )?ok \\d+ - zdtm/static/(\\S+)(?: # (SKIP|flavor) ?(.*))?$");
    private static final Pattern HANG = Pattern.compile("criu-zdtm: criu (\\S+) still running after .*");
    private static final Pattern FAIL_AT = Pattern.compile("Test zdtm/static/\\S+ FAIL at ([^#]*)");
    private static final int LOG_TAIL = 25;

    /** criu log lines each mode's runs must show in every passed test's dump.log and restore.log, or never show. */
    private static final Map<String, List<String>> REQUIRED = Map.of(
            "none", List.of(),
            "loaded", List.of("cuda_plugin: disabled", "amdgpu_plugin: disabled"),
            "forced", List.of("cuda_plugin: enabled (forced", "amdgpu_plugin: enabled (forced",
                    "Java side ready for"));
    private static final Map<String, String> FORBIDDEN = Map.of(
            "none", "Plugin \"", "loaded", "entered Java", "forced", "cuda_plugin: disabled: no NVIDIA");

    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.ZDTM_4_2_1)
            .withVolumes("/zdtm")
            .thenRun(c -> c.copyIn(Path.of(System.getProperty("criugpu.zdtm.runner", "zdtm/run-zdtm.sh")), RUNNER));

    /** Per flavour, the tests that passed without plugins: what the other modes are held to. */
    private static final Map<String, Set<String>> baseline = new LinkedHashMap<>();
    private static final List<String> summary = new ArrayList<>();
    private static long totalSeconds;
    private static final Map<String, List<String>> hangs = new LinkedHashMap<>();

    @TestFactory
    Stream<DynamicTest> everyTestThatPassesWithoutPluginsPassesWithThem(CriuContainer criu) {
        List<DynamicTest> runs = new ArrayList<>();
        for (String mode : List.of("none", "loaded", "forced")) {
            for (String flavour : FLAVOURS) {
                int reps = mode.equals("forced") && flavour.equals("ns") ? FORCED_NS_REPETITIONS : 1;
                for (int rep = 1; rep <= reps; rep++) {
                    String name = mode + " " + flavour + (reps > 1 ? " " + rep + "/" + reps : "");
                    runs.add(DynamicTest.dynamicTest(name, () -> check(criu, mode, flavour, name)));
                }
            }
        }
        return runs.stream();
    }

    @AfterAll
    static void printSummary() {
        System.out.println("zdtm runs (" + totalSeconds + " s in all):\n  " + String.join("\n  ", summary));
        hangs.forEach((test, where) -> System.out.println("zdtm hang: " + test + " in " + String.join(", ", where)));
    }

    private static void check(CriuContainer criu, String mode, String flavour, String name) {
        Run run = Run.in(criu, mode, flavour, name);
        String line = name + ": " + run.passed.size() + " passed, " + run.skipped.size() + " skipped, "
                + run.failed.size() + " failed" + (run.failed.isEmpty() ? "" : " " + run.failed.keySet()) + ", "
                + run.seconds + " s";
        summary.add(line);
        totalSeconds += run.seconds;
        System.out.println("zdtm " + line);
        Map<String, Failure> failures = new LinkedHashMap<>();
        for (String t : run.failed.keySet()) {
            Failure f = run.failure(criu, t);
            failures.put(t, f);
            if (f.hungIn != null) hangs.computeIfAbsent(t, k -> new ArrayList<>()).add(name + " (" + f.hungIn + ")");
        }

        List<String> missing = TESTS.stream()
                .filter(t -> !run.passed.contains(t) && !run.skipped.contains(t) && !run.failed.containsKey(t))
                .toList();
        if (!missing.isEmpty()) {
            throw new AssertionError("zdtm " + name + ": the report names no result for " + missing + "\n" + run.output);
        }
        if (mode.equals("none")) {
            baseline.put(flavour, run.passed);
        }
        Set<String> expected = baseline.get(flavour);
        if (expected == null) throw new AssertionError("zdtm " + name + ": the run without plugins did not finish");
        List<String> problems = new ArrayList<>();
        failures.forEach((t, f) -> {
            if (mode.equals("none") || expected.contains(t)) problems.add(f.text);
        });
        List<String> controls = run.controlViolations(criu, mode);
        if (!problems.isEmpty() || !controls.isEmpty()) {
            String what = mode.equals("none")
                    ? problems.size() + " tests failed without plugins (the list should hold only tests that pass here)"
                    : problems.size() + " of the " + expected.size() + " tests that pass without plugins failed with them";
            throw new AssertionError("zdtm " + name + ": " + what
                    + (controls.isEmpty() ? "" : "; criu's logs do not show the plugins as mode " + mode
                    + " sets them up: " + String.join(", ", controls))
                    + "\n\n" + String.join("\n\n", problems));
        }
    }

    /** One run-zdtm.sh run: each test's result from zdtm's TAP report, and for a failed test its output there. */
    private record Run(String mode, String flavour, String report, Set<String> passed, Set<String> skipped,
                       Map<String, String> failed, long seconds, String output) {
        static Run in(CriuContainer criu, String mode, String flavour, String name) {
            String report = "/tmp/zdtm-report/" + name.replaceAll("\\W", "-");
            long start = System.nanoTime();
            CommandResult r = criu.sh(RUN_BOUND, "PLUGIN_DIR=" + CriuContainer.PLUGIN_DIR + " ZDTM_PARALLEL=" + PARALLEL
                    + " CRIU_TIMEOUT_S=" + CRIU_TIMEOUT_S + " timeout -k 10 1800 bash " + RUNNER + " " + mode + " "
                    + flavour + " " + report + " " + String.join(" ", TESTS) + " 2>&1");
            long seconds = (System.nanoTime() - start) / 1_000_000_000L;
            if (!r.succeeded()) throw new AssertionError("zdtm " + name + ": " + tail(r.describe(), 60));
            Set<String> passed = new LinkedHashSet<>();
            Set<String> skipped = new LinkedHashSet<>();
            Map<String, String> failed = new LinkedHashMap<>();
            String current = null;
            for (String line : criu.readFile(report + "/criu-testreport.tap").lines().toList()) {
                Matcher m = TAP.matcher(line);
                if (m.matches()) {
                    current = null;
                    if (m.group(1) != null) failed.put(current = m.group(2), "");
                    else if ("SKIP".equals(m.group(3))) skipped.add(m.group(2));
                    else passed.add(m.group(2));
                } else if (current != null) {
                    failed.merge(current, line + "\n", String::concat);
                }
            }
            return new Run(mode, flavour, report, passed, skipped, failed, seconds, r.stdout());
        }

        /** What a failed test left: whether criu hung (run-zdtm.sh's note), the step zdtm names, criu's last log. */
        Failure failure(CriuContainer criu, String test) {
            // zdtm copies a failed test's images and logs to <report>/zdtm_static_<test>_<flavour>/images/<iteration>
            List<String> found = criu.sh("d=$(ls -d " + report + "/zdtm_static_" + test + "_" + flavour
                    + "*/images/* 2>/dev/null | tail -n 1); [ -n \"$d\" ] || exit 0; cat \"$d/criu-zdtm-hang\" 2>/dev/null;"
                    + " f=$d/restore.log; [ -f \"$f\" ] || f=$d/dump.log; [ -f \"$f\" ] && echo \"$f\" && tail -n "
                    + LOG_TAIL + " \"$f\"").stdout().lines().toList();
            Matcher hang = HANG.matcher(found.isEmpty() ? "" : found.get(0));
            boolean hung = hang.matches();
            Matcher at = FAIL_AT.matcher(failed.get(test));
            String what = hung ? "HANG: " + hang.group().replace("criu-zdtm: ", "").replace(" (hang)", "")
                    : at.find() ? "failed at " + at.group(1).strip() : "failed";
            List<String> log = hung ? found.subList(1, found.size()) : found;
            String text = "--- " + test + " (" + mode + ", flavour " + flavour + ", " + report + "): " + what + "\n"
                    + (log.isEmpty() ? "(no criu log in the report); zdtm's output:\n" + tail(failed.get(test), LOG_TAIL)
                    : "last lines of " + String.join("\n", log));
            return new Failure(hung ? hang.group(1) : null, text);
        }

        /** The criu logs of passed tests that lack a line the mode must show, or show one it must not. */
        List<String> controlViolations(CriuContainer criu, String mode) {
            String logs = "*/*/*/dump.log */*/*/restore.log";
            StringBuilder script = new StringBuilder("cd " + ZDTM + "/dump/zdtm/static && {");
            for (String required : REQUIRED.get(mode)) {
                script.append(" grep -L -F -e '").append(required).append("' ").append(logs).append(';');
            }
            script.append(" grep -l -F -e '").append(FORBIDDEN.get(mode)).append("' ").append(logs).append("; } | sort -u");
            return criu.sh(script.toString()).stdout().lines()
                    .filter(path -> path.contains("/") && passed.contains(path.substring(0, path.indexOf('/')))).toList();
        }
    }

    /** A failed test: the criu command that hung (null if none did), and what to show. */
    private record Failure(String hungIn, String text) {
    }

    private static String tail(String s, int lines) {
        List<String> all = s.lines().toList();
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }
}

package dev.criugpu.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The counter workload (src/test/c/counter.c) running in a container: appends 1, 2, 3, ... to a file. Started in
 * its own session with stdio on /dev/null, so criu sees no external pipes or terminals.
 */
public final class CounterWorkload {
    private static final Duration PROGRESS_TIMEOUT = Duration.ofSeconds(20);

    private final CriuContainer container;
    /** Pid of each counting process and the file it appends to. */
    private final List<Counter> counters;

    public record Counter(int pid, String file) {
    }

    private CounterWorkload(CriuContainer container, List<Counter> counters) {
        this.container = container;
        this.counters = counters;
    }

    /** One counting process writing {@code file}. */
    public static CounterWorkload startSingle(CriuContainer c, String file) {
        int pid = launch(c, file);
        CounterWorkload w = new CounterWorkload(c, List.of(new Counter(pid, file)));
        w.awaitProgress(3);
        return w;
    }

    /** One counting process writing {@code file} that also holds {@code files} open files for criu to take. */
    public static CounterWorkload startHolding(CriuContainer c, String file, int files) {
        int pid = launch(c, "--fds " + files + " " + file);
        CounterWorkload w = new CounterWorkload(c, List.of(new Counter(pid, file)));
        w.awaitProgress(3);
        return w;
    }

    /** One counting process with {@code threads} more threads, each blocked for ever; criu restores threads last. */
    public static CounterWorkload startThreaded(CriuContainer c, String file, int threads) {
        int pid = launch(c, "--threads " + threads + " " + file);
        CounterWorkload w = new CounterWorkload(c, List.of(new Counter(pid, file)));
        w.awaitProgress(3);
        return w;
    }

    /**
     * As {@link #startThreaded}, as the first process of a new pid namespace (pid 1 there, as a container's first
     * process is) and the leader of its own session, started by {@code unshare --pid --fork setsid}; unshare stays as its
     * parent.
     */
    public static CounterWorkload startThreadedNamespaceInit(CriuContainer c, String file, int threads) {
        CommandResult r = c.sh("setsid unshare --pid --fork setsid " + CriuContainer.WORKLOADS + "/counter --threads " + threads
                + " " + file + " </dev/null >/dev/null 2>&1 & echo $!").orFail();
        String childrenFile = "/proc/" + r.stdout().trim() + "/task/" + r.stdout().trim() + "/children";
        Eventually.await("unshare to fork the counter", PROGRESS_TIMEOUT,
                () -> !c.sh("cat " + childrenFile).stdout().isBlank());
        int pid = Integer.parseInt(c.sh("cat " + childrenFile).orFail().stdout().trim());
        CounterWorkload w = new CounterWorkload(c, List.of(new Counter(pid, file)));
        w.awaitProgress(3);
        return w;
    }

    /**
     * One counting process that listens on 127.0.0.1 and has closed a connection to its listener from the listener's
     * side, so a TIME_WAIT entry holds the port (written to {@code file}.port) for 60 s.
     */
    public static CounterWorkload startListening(CriuContainer c, String file) {
        int pid = launch(c, "--listen " + file);
        CounterWorkload w = new CounterWorkload(c, List.of(new Counter(pid, file)));
        w.awaitProgress(3);
        return w;
    }

    /**
     * One counting process that maps {@code mib} MiB of patterned memory when the fake cuda-checkpoint's checkpoint
     * asks ({@code FAKE_CUDA_HOST_COPY}), as the driver maps its host copy, and checks it on {@link #verifyHostCopy}.
     */
    public static CounterWorkload startHostCopy(CriuContainer c, String file, int mib) {
        int pid = launch(c, "--host-copy " + mib + " " + file);
        CounterWorkload w = new CounterWorkload(c, List.of(new Counter(pid, file)));
        w.awaitProgress(3);
        return w;
    }

    /** The --host-copy workload's check of its memory: its count of words that differ from the pattern. */
    public long verifyHostCopy() {
        String file = counters.getFirst().file();
        container.exec("rm", "-f", file + ".verified").orFail();
        container.exec("touch", file + ".verify-request").orFail();
        Eventually.await("the workload to check its host copy", PROGRESS_TIMEOUT, () -> container.fileExists(file + ".verified"));
        String text = container.readFile(file + ".verified").strip();
        return Long.parseLong(text.substring(text.indexOf('=') + 1));
    }

    /** A parent and its child, writing {@code file}.parent and {@code file}.child; their stderr appends to {@code file}.stderr. */
    public static CounterWorkload startTree(CriuContainer c, String file) {
        int parent = launch(c, "--tree " + file, file + ".stderr");
        String childrenFile = "/proc/" + parent + "/task/" + parent + "/children";
        Eventually.await("counter " + parent + " to fork its child", PROGRESS_TIMEOUT,
                () -> !c.sh("cat " + childrenFile).stdout().isBlank());
        int child = Integer.parseInt(c.sh("cat " + childrenFile).orFail().stdout().trim());
        CounterWorkload w = new CounterWorkload(c, List.of(
                new Counter(parent, file + ".parent"), new Counter(child, file + ".child")));
        w.awaitProgress(3);
        return w;
    }

    private static int launch(CriuContainer c, String args) {
        return launch(c, args, "/dev/null");
    }

    private static int launch(CriuContainer c, String args, String stderr) {
        CommandResult r = c.sh("setsid " + CriuContainer.WORKLOADS + "/counter " + args
                + " </dev/null >/dev/null 2>>" + stderr + " & echo $!").orFail();
        return Integer.parseInt(r.stdout().trim());
    }

    public int rootPid() {
        return counters.getFirst().pid();
    }

    public List<Counter> counters() {
        return counters;
    }

    /** The complete lines of a counter's file, as numbers. */
    public List<Long> values(Counter counter) {
        String text = container.readFileIfExists(counter.file());
        int end = text.lastIndexOf('\n');
        List<Long> values = new ArrayList<>();
        if (end < 0) return values;
        for (String line : text.substring(0, end).split("\n")) values.add(Long.parseLong(line));
        return values;
    }

    public long lastValue(Counter counter) {
        List<Long> v = values(counter);
        return v.isEmpty() ? 0 : v.getLast();
    }

    /** Waits until every counter has written {@code more} values beyond what it had written so far. */
    public void awaitProgress(int more) {
        for (Counter counter : counters) {
            long target = lastValue(counter) + more;
            Eventually.await(counter.file() + " to reach " + target, PROGRESS_TIMEOUT,
                    () -> lastValue(counter) >= target,
                    () -> "pid " + counter.pid() + " alive: " + container.pidInUse(counter.pid())
                            + ", last value " + lastValue(counter));
        }
    }

    /** Waits until criu's kill after a dump is complete: no counter pid is held any more (init reaped them). */
    public void awaitGone() {
        for (Counter counter : counters) {
            Eventually.await("pid " + counter.pid() + " to be free after the dump", PROGRESS_TIMEOUT,
                    () -> !container.pidInUse(counter.pid()));
        }
    }

    /** After a dump: waits until criu's kill is complete ({@link #awaitGone()}), then returns {@link #lastValues()}. */
    public List<Long> awaitDumped() {
        awaitGone();
        return lastValues();
    }

    /** Last value of each counter, in {@link #counters()} order. */
    public List<Long> lastValues() {
        return counters.stream().map(this::lastValue).toList();
    }

    /**
     * Asserts that each counter runs again under its original pid and continued from {@code before}: its file
     * holds exactly 1..n with n beyond the value it had reached at the dump (no reset, no gap, no repeat).
     */
    public void assertContinuedFrom(List<Long> before) {
        for (Counter counter : counters) {
            assertTrue(container.pidInUse(counter.pid()), "restored counter pid " + counter.pid() + " is not running");
        }
        awaitProgress(5);
        for (int i = 0; i < counters.size(); i++) {
            Counter counter = counters.get(i);
            List<Long> values = values(counter);
            assertTrue(values.getLast() > before.get(i) + 4,
                    counter.file() + " did not advance past " + before.get(i) + " after restore");
            for (int k = 0; k < values.size(); k++) {
                if (values.get(k) != k + 1) {
                    assertEquals(k + 1, values.get(k), counter.file() + ": line " + (k + 1) + " breaks the sequence "
                            + "(value at dump " + before.get(i) + ", around: "
                            + values.subList(Math.max(0, k - 3), Math.min(values.size(), k + 3)) + ")");
                }
            }
        }
    }

    /** Ends the counters (the test's own cleanup; the container goes away anyway). */
    public void kill() {
        for (Counter counter : counters) container.exec("kill", "-9", Integer.toString(counter.pid()));
    }
}

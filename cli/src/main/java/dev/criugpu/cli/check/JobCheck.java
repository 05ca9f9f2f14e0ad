package dev.criugpu.cli.check;

import dev.criugpu.cli.check.ProcFs.Task;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static dev.criugpu.cli.check.Words.plural;

/**
 * What would stop {@code criu dump} of a running process tree, as far as /proc shows it: each {@link Check} looks at
 * one thing (io_uring, deleted and /dev/shm files, TCP, RDMA, NVIDIA device files, shared memory between them, NCCL's
 * settings), in the order the report lists them. Reads only /proc (through {@link ProcFs}); asks no GPU and no driver.
 */
public final class JobCheck {
    private static final List<Check> CHECKS = List.of(new TreeNote(), new IoUringCheck(), new GhostFileCheck(),
            new TcpCheck(), new RdmaCheck(), new NvidiaHolderCheck(), new CudaIpcCheck(), new SharedMemoryCheck(), new NcclCheck());

    public enum Kind {
        PROBLEM("problem"), NEEDS("needs"), NOTE("note");

        final String prefix;

        Kind(String prefix) {
            this.prefix = prefix;
        }
    }

    /**
     * One line of the report; {@code topic} says which check wrote it (io_uring, ghost, tcp, nvidia, nccl, ...).
     * A line that counts several like things has them in {@code items}, one each (what {@code --verbose} lists).
     */
    public record Finding(Kind kind, String topic, String text, List<String> items) {
        public Finding {
            items = List.copyOf(items);
        }

        public Finding(Kind kind, String topic, String text) {
            this(kind, topic, text, List.of());
        }

        @Override
        public String toString() {
            return kind.prefix + ": " + text;
        }
    }

    private final JobTree tree;
    private final Findings found = new Findings();

    private JobCheck(JobTree tree) {
        this.tree = tree;
    }

    /**
     * Checks the tree rooted at {@code rootPid} (a process: pass a thread's tgid); {@code pathEnv} is the PATH where
     * criu would look for iptables-restore (and where criu itself is looked for).
     */
    public static JobCheck run(ProcFs proc, int rootPid, String pathEnv) {
        return run(proc, Path.of("/"), rootPid, pathEnv);
    }

    /** As {@link #run(ProcFs, int, String)}, with /sys, /lib/modules and /boot looked for under {@code host}. */
    public static JobCheck run(ProcFs proc, Path host, int rootPid, String pathEnv) {
        JobCheck c = new JobCheck(new JobTree(proc, host, rootPid, pathEnv));
        for (Check check : CHECKS) check.run(c.tree, c.found);
        return c;
    }

    public List<Finding> findings() {
        return List.copyOf(found.lines);
    }

    public List<Task> tasks() {
        return tree.tasks;
    }

    public long count(Kind kind) {
        return found.lines.stream().filter(f -> f.kind() == kind).count();
    }

    /** 0: nothing seen would stop a plain criu dump; 1: a problem or a missing option would. */
    public int exitStatus() {
        return count(Kind.PROBLEM) + count(Kind.NEEDS) > 0 ? 1 : 0;
    }

    /** The summary line: counts, then the criu options for dump and restore. */
    public String summary(int rootPid) {
        long problems = count(Kind.PROBLEM), needs = count(Kind.NEEDS);
        StringBuilder sb = new StringBuilder("summary: ");
        if (problems + needs == 0) {
            sb.append("nothing seen that would stop criu dump -t ").append(rootPid).append("; no criu option needed");
            return sb.toString();
        }
        sb.append(plural(problems, "problem")).append(" (no criu option avoids ")
                .append(problems == 1 ? "it" : "them").append("), ").append(plural(needs, "need"))
                .append(" (criu options); a plain criu dump would fail");
        if (!found.dumpOptions.isEmpty()) {
            sb.append("; options: criu dump -t ").append(rootPid).append(options(found.dumpOptions));
            if (!found.restoreOptions.isEmpty()) sb.append(", criu restore").append(options(found.restoreOptions));
        }
        return sb.toString();
    }

    private static String options(Map<String, String> opts) {
        StringBuilder sb = new StringBuilder();
        opts.forEach((k, v) -> sb.append(' ').append(k).append(v.isEmpty() ? "" : " " + v));
        return sb.toString();
    }
}

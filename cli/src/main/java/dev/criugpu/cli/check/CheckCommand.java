package dev.criugpu.cli.check;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * {@code criu-gpu check PID}: what would stop {@code criu dump} of the running tree rooted at PID, read from /proc
 * alone. One line per finding ({@code problem:}, {@code needs:}, {@code note:}; several like sockets or files make one
 * line that counts them, and {@code --verbose} lists them under it, indented), then a summary line with the criu
 * options. Exit status: 0 nothing seen would stop a plain dump, 1 something would, 2 usage or no such process.
 */
public final class CheckCommand {
    private CheckCommand() {
    }

    /** What starts each of a counting line's items under {@code --verbose}. */
    static final String ITEM_INDENT = "    ";

    static final String USAGE = "usage: criu-gpu check [--verbose] PID";

    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, ProcFs.live(), Path.of("/"), Objects.requireNonNullElse(System.getenv("PATH"), ""));
    }

    static int run(String[] args, PrintStream out, PrintStream err, ProcFs proc, String pathEnv) {
        return run(args, out, err, proc, Path.of("/"), pathEnv);
    }

    /** {@code host}: where /sys, /lib/modules and /boot are looked for ("/" but in tests). */
    static int run(String[] argv, PrintStream out, PrintStream err, ProcFs proc, Path host, String pathEnv) {
        List<String> args = new ArrayList<>(List.of(argv));
        if (args.size() == 1 && (args.getFirst().equals("--help") || args.getFirst().equals("-h"))) {
            out.println(USAGE);
            return 0;
        }
        boolean verbose = args.remove("--verbose") | args.remove("-v");
        if (args.size() != 1) {
            err.println(USAGE);
            return 2;
        }
        int pid;
        try {
            pid = Integer.parseInt(args.getFirst());
            if (pid <= 0) throw new NumberFormatException();
        } catch (NumberFormatException e) {
            err.println("criu-gpu check: '" + args.getFirst() + "' is not a process id");
            err.println(USAGE);
            return 2;
        }
        if (!proc.exists(pid)) {
            err.println("criu-gpu check: no process " + pid + " (nothing in " + proc.root().resolve(args.getFirst()) + ")");
            return 2;
        }
        OptionalLong tgid = proc.tgid(pid);
        int root = pid;
        if (tgid.isPresent() && tgid.getAsLong() != pid) {
            root = (int) tgid.getAsLong();
            out.println("note: " + pid + " is a thread of process " + root + ": checking process " + root);
        }
        JobCheck check = JobCheck.run(proc, host, root, pathEnv);
        if (check.tasks().isEmpty()) {
            err.println("criu-gpu check: process " + pid + " exited before it could be read");
            return 2;
        }
        boolean grouped = false;
        for (JobCheck.Finding f : check.findings()) {
            out.println(f);
            grouped |= !f.items().isEmpty();
            if (verbose) f.items().forEach(item -> out.println(ITEM_INDENT + item));
        }
        if (grouped && !verbose) {
            out.println("note: lines that count several sockets or files: criu-gpu check --verbose " + root
                    + " lists them one a line");
        }
        out.println(check.summary(root));
        return check.exitStatus();
    }
}

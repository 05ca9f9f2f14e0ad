package dev.criugpu.cli.check;

import java.io.PrintStream;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * {@code criu-gpu check PID}: what would stop {@code criu dump} of the running tree rooted at PID, read from /proc
 * alone. One line per finding ({@code problem:}, {@code needs:}, {@code note:}), then a summary line with the criu
 * options. Exit status: 0 nothing seen would stop a plain dump, 1 something would, 2 usage or no such process.
 */
public final class CheckCommand {
    private CheckCommand() {
    }

    static final String USAGE = "usage: criu-gpu check PID";

    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, ProcFs.live(), Objects.requireNonNullElse(System.getenv("PATH"), ""));
    }

    static int run(String[] args, PrintStream out, PrintStream err, ProcFs proc, String pathEnv) {
        if (args.length == 1 && (args[0].equals("--help") || args[0].equals("-h"))) {
            out.println(USAGE);
            return 0;
        }
        if (args.length != 1) {
            err.println(USAGE);
            return 2;
        }
        int pid;
        try {
            pid = Integer.parseInt(args[0]);
            if (pid <= 0) throw new NumberFormatException();
        } catch (NumberFormatException e) {
            err.println("criu-gpu check: '" + args[0] + "' is not a process id");
            err.println(USAGE);
            return 2;
        }
        if (!proc.exists(pid)) {
            err.println("criu-gpu check: no process " + pid + " (nothing in " + proc.root().resolve(args[0]) + ")");
            return 2;
        }
        OptionalLong tgid = proc.tgid(pid);
        int root = pid;
        if (tgid.isPresent() && tgid.getAsLong() != pid) {
            root = (int) tgid.getAsLong();
            out.println("note: " + pid + " is a thread of process " + root + ": checking process " + root);
        }
        JobCheck check = JobCheck.run(proc, root, pathEnv);
        if (check.tasks().isEmpty()) {
            err.println("criu-gpu check: process " + pid + " exited before it could be read");
            return 2;
        }
        check.findings().forEach(out::println);
        out.println(check.summary(root));
        return check.exitStatus();
    }
}

package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.Task;

import java.util.stream.Collectors;

import static dev.criugpu.cli.check.Words.plural;
import static dev.criugpu.cli.check.Words.shortWho;

/** Which processes the tree holds, and which of their /proc files could not be read (so were not checked). */
final class TreeNote implements Check {
    @Override
    public void run(JobTree tree, Findings out) {
        String list = tree.tasks.stream().map(t -> t.pid() == tree.rootPid ? shortWho(t)
                : shortWho(t) + " (child of " + t.ppid() + ")").collect(Collectors.joining(", "));
        out.add(Kind.NOTE, "tree", plural(tree.tasks.size(), "process") + " in the tree of pid " + tree.rootPid + ": "
                + list);
        for (Task t : tree.tasks) {
            if (!t.unreadable().isEmpty()) {
                out.add(Kind.NOTE, "unreadable", "could not read all of /proc/" + t.pid() + "/" + String.join(", /proc/"
                        + t.pid() + "/", t.unreadable()) + ": what they hold is not checked" + (t.unreadable().stream()
                        .anyMatch(u -> u.contains(ProcFs.DENIED)) ? " (run as root or as the job's user)" : ""));
            }
        }
    }
}

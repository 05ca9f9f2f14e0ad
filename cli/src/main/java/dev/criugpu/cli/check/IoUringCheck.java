package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.Task;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static dev.criugpu.cli.check.Words.who;

/** io_uring instances, which criu 4.2.1 cannot dump; torchrun's elastic agent is the usual holder. */
final class IoUringCheck implements Check {
    static final String IO_URING = "anon_inode:[io_uring]";

    @Override
    public void run(JobTree tree, Findings out) {
        for (Task t : tree.tasks) {
            List<Integer> fds = t.fds().entrySet().stream().filter(e -> e.getValue().equals(IO_URING))
                    .map(Map.Entry::getKey).toList();
            boolean mapped = t.maps().stream().anyMatch(m -> m.path().contains("io_uring"));
            if (fds.isEmpty() && !mapped) continue;
            String where = fds.isEmpty() ? "maps an io_uring ring (" + IO_URING + ") without an fd"
                    : (fds.size() == 1 ? "fd " : "fds ") + fds.stream().map(String::valueOf)
                    .collect(Collectors.joining(", ")) + ": io_uring (" + IO_URING + ")";
            boolean torchrun = String.join(" ", t.argv()).matches(".*(torchrun|torch\\.distributed\\.(run|launch)).*");
            out.add(Kind.PROBLEM, "io_uring", who(t) + " " + where + ": criu 4.2.1 cannot dump it (\"Unknown shit 600 ("
                    + IO_URING + ")\"); " + (torchrun ? "this is torchrun's elastic agent, which holds one (libuv in its "
                    + "rendezvous store; UV_USE_IO_URING=0 does not help): start the ranks with a plain launcher, "
                    + "which holds none" : "torchrun's elastic agent holds one (libuv); ranks started by a plain "
                    + "launcher hold none"));
        }
    }
}

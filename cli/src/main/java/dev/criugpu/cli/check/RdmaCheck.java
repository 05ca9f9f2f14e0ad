package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.Task;

import java.util.List;

import static dev.criugpu.cli.check.Words.who;

/** RDMA (InfiniBand/RoCE) device files, which criu cannot dump. */
final class RdmaCheck implements Check {
    @Override
    public void run(JobTree tree, Findings out) {
        for (Task t : tree.tasks) {
            List<String> ib = t.fds().entrySet().stream().filter(e -> e.getValue().startsWith("/dev/infiniband/"))
                    .map(e -> "fd " + e.getKey() + " " + e.getValue()).toList();
            if (!ib.isEmpty()) {
                out.add(Kind.PROBLEM, "rdma", who(t) + " holds RDMA device files (" + String.join(", ", ib) + "): criu "
                        + "cannot dump InfiniBand/RoCE verbs; NCCL opens them unless NCCL_IB_DISABLE=1");
            }
        }
    }
}

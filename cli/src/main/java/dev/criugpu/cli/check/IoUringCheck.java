package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.Task;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static dev.criugpu.cli.check.Words.who;

/**
 * io_uring instances, which criu 4.2.1 cannot dump. In a PyTorch job the holder is the process that hosts torch's
 * TCPStore server on libuv (thread pt_tcpstore_uv; libuv's 256-entry epoll-control ring): rank 0 of ranks started by a
 * plain launcher with env:// rendezvous, which USE_LIBUV=0 rids of it (measured, PyTorch 2.11); or torchrun's elastic
 * agent (thread pt_elastic), which holds one whatever USE_LIBUV, UV_USE_IO_URING, TORCHELASTIC_USE_AGENT_STORE or
 * --rdzv-conf use_libuv=0 say (measured; libuv 1.50 and later always set up the epoll-control ring): started under
 * {@code criu-gpu run}, where io_uring_setup fails with ENOSYS and libuv falls back to epoll, such a job dumps and
 * restores (measured at 4 ranks, issue 44). Docker 25+, containerd 2.0+ and podman refuse io_uring in their default
 * seccomp profiles already.
 */
final class IoUringCheck implements Check {
    static final String IO_URING = "anon_inode:[io_uring]";
    /** torch's TCPStore server on libuv (c10d's libuv backend) runs its loop in a thread of this name. */
    static final String TCPSTORE_UV_THREAD = "pt_tcpstore_uv";
    /** torchrun's elastic agent (torch.distributed.elastic) names its threads so. */
    static final String ELASTIC_THREAD = "pt_elastic";

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
            out.add(Kind.PROBLEM, "io_uring", who(t) + " " + where + ": criu 4.2.1 cannot dump it (\"Unknown shit 600 ("
                    + IO_URING + ")\"); " + whose(tree, t));
        }
    }

    /** Who made the ring, as the holder's threads and command line tell, and what gets rid of it. */
    private static String whose(JobTree tree, Task t) {
        List<String> threads = tree.proc.threadNames(t.pid());
        boolean torchrun = threads.contains(ELASTIC_THREAD)
                || String.join(" ", t.argv()).matches(".*(torchrun|torch\\.distributed\\.(run|launch)).*");
        if (torchrun) {
            return "this is torchrun's elastic agent (" + (threads.contains(ELASTIC_THREAD) ? "thread " + ELASTIC_THREAD
                    : "its command line") + "), which holds one for its rendezvous store's libuv whatever USE_LIBUV, "
                    + "UV_USE_IO_URING, TORCHELASTIC_USE_AGENT_STORE or --rdzv-conf use_libuv=0 say: start the job "
                    + "with `criu-gpu run -- torchrun ...` (io_uring unavailable to it and all it starts, so libuv "
                    + "uses epoll), or start the ranks with a plain launcher (env:// rendezvous) and USE_LIBUV=0";
        }
        if (threads.contains(TCPSTORE_UV_THREAD)) {
            String now = t.env().get("USE_LIBUV");
            return "this process hosts torch's TCPStore server on libuv (thread " + TCPSTORE_UV_THREAD + ": rank 0, "
                    + "or MASTER_ADDR's process, with env:// rendezvous), whose event loop holds it: start the job "
                    + "with USE_LIBUV=0 in its environment (its TCPStore then holds none)" + (now == null ? ""
                    : "; its environment at exec has USE_LIBUV=" + now + (now.equals("0") ? ", so the program asks "
                    + "for libuv itself (TCPStore(..., use_libuv=True))" : ""));
        }
        return "neither torch's TCPStore server on libuv (thread " + TCPSTORE_UV_THREAD + ", rid of it by USE_LIBUV=0) "
                + "nor torchrun's elastic agent (thread " + ELASTIC_THREAD + ") runs in this process: the program or "
                + "one of its libraries made it";
    }
}

package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.Task;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static dev.criugpu.cli.check.Words.who;

/**
 * TCP sockets of the tree: connected ones need --tcp-established (and a network lock criu can take here), listening
 * ones with connections not yet accepted need --skip-in-flight. Each socket once, with every fd that holds it.
 */
final class TcpCheck implements Check {
    /** Established connections listed one a line; the rest are counted. */
    static final int MAX_CONNECTION_LINES = 32;

    private record Held(Task task, int fd, TcpSocket socket) {
    }

    @Override
    public void run(JobTree tree, Findings out) {
        List<Held> held = held(tree);
        Map<String, Held> byLocal = new LinkedHashMap<>();
        Map<Long, List<Held>> byInode = new LinkedHashMap<>();
        for (Held h : held) {
            if (h.socket().connected()) byLocal.putIfAbsent(h.task().netns() + " " + h.socket().local(), h);
            byInode.computeIfAbsent(h.socket().inode(), k -> new ArrayList<>()).add(h);
        }
        int connected = 0;
        boolean allLoopback = true;
        for (List<Held> holders : byInode.values()) {
            Held h = holders.getFirst();
            TcpSocket s = h.socket();
            String also = holders.size() == 1 ? "" : " (also " + holders.stream().skip(1)
                    .map(o -> "pid " + o.task().pid() + " fd " + o.fd()).collect(Collectors.joining(", ")) + ")";
            if (s.inFlight()) {
                out.add(Kind.NEEDS, "tcp", "--skip-in-flight: " + who(h.task()) + " fd " + h.fd() + also + ": "
                        + "listening socket " + s.local() + " has " + s.rxQueue() + " connection(s) not yet accepted "
                        + "(criu drops them with --skip-in-flight, refuses the dump without)");
                out.dumpOption("--skip-in-flight", "");
            }
            if (!s.connected()) continue;
            connected++;
            allLoopback &= s.loopback();
            if (connected > MAX_CONNECTION_LINES) continue;
            Held peer = byLocal.get(h.task().netns() + " " + s.remote());
            out.add(Kind.NEEDS, "tcp", "--tcp-established: " + who(h.task()) + " fd " + h.fd() + also + ": TCP "
                    + s.local() + " -> " + s.remote() + " " + s.stateName() + (peer == null ? " (peer outside the tree)"
                    : " (peer in the tree: pid " + peer.task().pid() + " fd " + peer.fd() + ")"));
        }
        if (connected == 0) return;
        if (connected > MAX_CONNECTION_LINES) {
            out.add(Kind.NEEDS, "tcp", "--tcp-established: " + (connected - MAX_CONNECTION_LINES)
                    + " more connected TCP sockets (not listed)");
        }
        out.dumpOption("--tcp-established", "");
        out.restoreOption("--tcp-established", "");
        if (!tree.proc.onPath(tree.pathEnv, "iptables-restore")) {
            out.add(Kind.NEEDS, "network-lock", "--network-lock skip: iptables-restore is not on this host's PATH, and "
                    + "criu locks TCP connections with iptables by default (--network-lock nftables where criu was "
                    + "built with nftables and the kernel has nf_tables; skip leaves the connections unlocked while "
                    + "criu works, safe when both ends are in the dumped tree)");
            out.dumpOption("--network-lock", "skip");
            out.restoreOption("--network-lock", "skip");
        }
        out.add(Kind.NOTE, "tcp", "criu restores connected sockets at their addresses and ports: "
                + (allLoopback ? "all are on loopback; " : "")
                + "restoring on this host right after the dump fails with \"Address already in use\" until the "
                + "dumped job's ports leave TIME_WAIT (about 60 s); peers outside the tree must still be there");
    }

    /** Every fd of the tree that is a TCP socket, with the socket as its network namespace's tables show it. */
    private static List<Held> held(JobTree tree) {
        Map<String, Map<Long, TcpSocket>> tablesByNs = new LinkedHashMap<>();
        List<Held> held = new ArrayList<>();
        for (Task t : tree.tasks) {
            Map<Long, TcpSocket> table = tablesByNs.computeIfAbsent(t.netns().isEmpty() ? "pid" + t.pid() : t.netns(),
                    k -> readTables(tree.proc, t.pid()));
            for (Map.Entry<Integer, String> fd : t.fds().entrySet()) {
                String link = fd.getValue();
                if (!link.startsWith("socket:[")) continue;
                long inode;
                try {
                    inode = Long.parseLong(link.substring(8, link.length() - 1));
                } catch (RuntimeException e) {
                    continue;
                }
                TcpSocket s = table.get(inode);
                if (s != null) held.add(new Held(t, fd.getKey(), s));
            }
        }
        return held;
    }

    private static Map<Long, TcpSocket> readTables(ProcFs proc, int pid) {
        Map<Long, TcpSocket> table = new LinkedHashMap<>();
        for (String name : List.of("tcp", "tcp6")) {
            for (String line : proc.netTable(pid, name)) {
                TcpSocket.parse(line).filter(s -> s.inode() != 0).ifPresent(s -> table.putIfAbsent(s.inode(), s));
            }
        }
        return table;
    }
}

package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.Task;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static dev.criugpu.cli.check.Words.plural;
import static dev.criugpu.cli.check.Words.who;

/**
 * TCP sockets of the tree: connected ones need --tcp-established (and a network lock criu can take here), listening
 * ones with connections not yet accepted need --skip-in-flight. Each socket once, with every fd that holds it; several
 * of a kind make one line that counts them (--verbose lists them). Connections closed on a port the tree listens on
 * that linger in TIME_WAIT would stop a restore on this host until they expire.
 */
final class TcpCheck implements Check {
    /** The CUDA plugin's restore removes TIME_WAIT entries on the image's listen ports (docs/DESIGN.md rule 13). */
    static final String UNLESS_CUDA = ", unless criu restores it with the CUDA plugin, which removes such TIME_WAIT "
            + "entries first";
    /**
     * States of a connection that its process has closed and the kernel still keeps, owned by no file (inode 0 in
     * /proc/net/tcp): FIN_WAIT1, FIN_WAIT2, TIME_WAIT, CLOSE, LAST_ACK, CLOSING. SYN_RECV (a connection being
     * accepted) has no inode either but is no closed one.
     */
    static final Set<Integer> CLOSING = Set.of(0x04, 0x05, 0x06, 0x07, 0x09, 0x0B);

    /** TIME_WAIT, the usual one, first; then the others in the kernel's order. */
    private static final Comparator<Integer> TIME_WAIT_FIRST = Comparator.comparing((Integer s) -> s != 0x06)
            .thenComparing(Comparator.naturalOrder());

    private record Held(Task task, int fd, TcpSocket socket) {
    }

    /** One network namespace's TCP tables: every entry, and those with an inode by inode. */
    private record Tables(List<TcpSocket> all, Map<Long, TcpSocket> byInode) {
    }

    @Override
    public void run(JobTree tree, Findings out) {
        Map<String, Tables> tables = new LinkedHashMap<>();
        List<Held> held = held(tree, tables);
        /* by network namespace, local and remote end: accepted connections share their listener's local end */
        Map<String, Held> byLocal = new LinkedHashMap<>();
        Map<Long, List<Held>> byInode = new LinkedHashMap<>();
        for (Held h : held) {
            if (h.socket().connected()) {
                byLocal.putIfAbsent(nsKey(h.task()) + " " + h.socket().local() + " " + h.socket().remote(), h);
            }
            byInode.computeIfAbsent(h.socket().inode(), k -> new ArrayList<>()).add(h);
        }
        List<String> inFlight = new ArrayList<>(), connections = new ArrayList<>();
        Set<Integer> inFlightPids = new TreeSet<>(), connectedPids = new TreeSet<>();
        long waiting = 0;
        int peersInTree = 0;
        boolean allLoopback = true;
        Map<String, Set<Integer>> listening = new LinkedHashMap<>();
        for (List<Held> holders : byInode.values()) {
            Held h = holders.getFirst();
            TcpSocket s = h.socket();
            String also = holders.size() == 1 ? "" : " (also " + holders.stream().skip(1)
                    .map(o -> "pid " + o.task().pid() + " fd " + o.fd()).collect(Collectors.joining(", ")) + ")";
            if (s.state() == TcpSocket.LISTEN) {
                listening.computeIfAbsent(nsKey(h.task()), k -> new TreeSet<>()).add(s.localPort());
            }
            if (s.inFlight()) {
                inFlight.add(who(h.task()) + " fd " + h.fd() + also + ": listening socket " + s.local() + " has "
                        + s.rxQueue() + " connection(s) not yet accepted (criu drops them with --skip-in-flight, "
                        + "refuses the dump without)");
                holders.forEach(o -> inFlightPids.add(o.task().pid()));
                waiting += s.rxQueue();
            }
            if (!s.connected()) continue;
            allLoopback &= s.loopback();
            holders.forEach(o -> connectedPids.add(o.task().pid()));
            Held peer = byLocal.get(nsKey(h.task()) + " " + s.remote() + " " + s.local());
            if (peer != null) peersInTree++;
            connections.add(who(h.task()) + " fd " + h.fd() + also + ": TCP " + s.local() + " -> " + s.remote() + " "
                    + s.stateName() + (peer == null ? " (peer outside the tree)" : " (peer in the tree: pid "
                    + peer.task().pid() + " fd " + peer.fd() + ")"));
        }
        if (!inFlight.isEmpty()) {
            out.addGrouped(Kind.NEEDS, "tcp", "--skip-in-flight: ", inFlight, inFlight.size() + " listening sockets "
                    + "in " + plural(inFlightPids.size(), "process") + " have " + waiting + " connections not yet "
                    + "accepted (criu drops them with --skip-in-flight, refuses the dump without)");
            out.dumpOption("--skip-in-flight", "");
        }
        if (!connections.isEmpty()) {
            int outside = connections.size() - peersInTree;
            out.addGrouped(Kind.NEEDS, "tcp", "--tcp-established: ", connections, connections.size() + " connected "
                    + "TCP sockets in " + plural(connectedPids.size(), "process") + " (" + (outside == 0 ? "all peers in "
                    + "the tree" : peersInTree == 0 ? "all peers outside the tree" : peersInTree + " with their peer in "
                    + "the tree, " + outside + " with a peer outside it") + ")");
            out.dumpOption("--tcp-established", "");
            out.restoreOption("--tcp-established", "");
            networkLock(tree, out);
            out.add(Kind.NOTE, "tcp", "criu restores connected sockets at their addresses and ports"
                    + (allLoopback ? " (all on loopback)" : "") + ": a restore on this host needs those ports free (criu "
                    + "binds with SO_REUSEADDR and SO_REUSEPORT, so a socket bound to one without them blocks it); "
                    + "peers outside the tree must still be there");
        }
        timeWait(tables, listening, out);
    }

    /**
     * criu locks the connections while it works, with iptables by default: where iptables-restore is missing,
     * nftables where the kernel and criu have it, else no lock.
     */
    private static void networkLock(JobTree tree, Findings out) {
        if (tree.proc.onPath(tree.pathEnv, "iptables-restore")) return;
        String why = "iptables-restore is not on this host's PATH, and criu locks TCP connections with iptables by "
                + "default";
        Nftables.Verdict nft = Nftables.probe(tree.proc, tree.host, tree.pathEnv);
        String lock = nft.usable() ? "nftables" : "skip";
        if (nft.usable()) {
            out.add(Kind.NEEDS, "network-lock", "--network-lock nftables: " + why + "; nftables can lock instead: "
                    + nft.why() + " (criu takes the lock through libnftables: no nft command needed)");
        } else {
            out.add(Kind.NEEDS, "network-lock", "--network-lock skip: " + why + ", and nftables cannot lock here: "
                    + nft.why() + " (skip leaves the connections unlocked while criu works, safe when both ends are "
                    + "in the dumped tree)");
        }
        out.dumpOption("--network-lock", lock);
        out.restoreOption("--network-lock", lock);
    }

    /** Closed connections, owned by no process, still bound to a port the tree listens on. */
    private static void timeWait(Map<String, Tables> tables, Map<String, Set<Integer>> listening, Findings out) {
        List<String> items = new ArrayList<>();
        List<String> perPort = new ArrayList<>();
        long total = 0;
        Set<Integer> states = new TreeSet<>(TIME_WAIT_FIRST);
        for (Map.Entry<String, Set<Integer>> ns : listening.entrySet()) {
            Tables t = tables.get(ns.getKey());
            if (t == null) continue;
            for (int port : ns.getValue()) {
                Map<Integer, Integer> byState = new TreeMap<>();
                for (TcpSocket s : t.all()) {
                    if (s.inode() == 0 && CLOSING.contains(s.state()) && s.localPort() == port) {
                        byState.merge(s.state(), 1, Integer::sum);
                    }
                }
                if (byState.isEmpty()) continue;
                int n = byState.values().stream().mapToInt(Integer::intValue).sum();
                total += n;
                states.addAll(byState.keySet());
                items.add(inStates(byState) + " on port " + port + ", which the tree listens on: a restore on this "
                        + "host before they expire (≤ 60 s) fails with \"Address already in use\"" + UNLESS_CUDA);
                perPort.add(port + ": " + n);
            }
        }
        String stateNames = states.stream().map(TcpSocket::stateName).collect(Collectors.joining(" or "));
        out.addGrouped(Kind.NOTE, "tcp", "", items, total + " connections in " + stateNames + " on " + items.size()
                + " ports the tree listens on (" + String.join(", ", perPort) + "): a restore on this host before "
                + "they expire (≤ 60 s) fails with \"Address already in use\"" + UNLESS_CUDA);
    }

    /** "3 connection(s) in TIME_WAIT" or "3 connection(s) in TIME_WAIT and 1 in FIN_WAIT2". */
    private static String inStates(Map<Integer, Integer> byState) {
        List<String> parts = new ArrayList<>();
        byState.keySet().stream().sorted(TIME_WAIT_FIRST).map(k -> Map.entry(k, byState.get(k))).forEach(e -> parts.add(e.getValue()
                + (parts.isEmpty() ? " connection(s)" : "") + " in " + TcpSocket.stateName(e.getKey())));
        return String.join(" and ", parts);
    }

    private static String nsKey(Task t) {
        return t.netns().isEmpty() ? "pid" + t.pid() : t.netns();
    }

    /** Every fd of the tree that is a TCP socket, with the socket as its network namespace's tables show it. */
    private static List<Held> held(JobTree tree, Map<String, Tables> tables) {
        List<Held> held = new ArrayList<>();
        for (Task t : tree.tasks) {
            Tables table = tables.computeIfAbsent(nsKey(t), k -> readTables(tree.proc, t.pid()));
            for (Map.Entry<Integer, String> fd : t.fds().entrySet()) {
                String link = fd.getValue();
                if (!link.startsWith("socket:[")) continue;
                long inode;
                try {
                    inode = Long.parseLong(link.substring(8, link.length() - 1));
                } catch (RuntimeException e) {
                    continue;
                }
                TcpSocket s = table.byInode().get(inode);
                if (s != null) held.add(new Held(t, fd.getKey(), s));
            }
        }
        return held;
    }

    private static Tables readTables(ProcFs proc, int pid) {
        List<TcpSocket> all = new ArrayList<>();
        Map<Long, TcpSocket> byInode = new LinkedHashMap<>();
        for (String name : List.of("tcp", "tcp6")) {
            for (String line : proc.netTable(pid, name)) {
                TcpSocket.parse(line).ifPresent(s -> {
                    all.add(s);
                    if (s.inode() != 0) byInode.putIfAbsent(s.inode(), s);
                });
            }
        }
        return new Tables(all, byInode);
    }
}

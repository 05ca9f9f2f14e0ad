package dev.criugpu.cli.check;

import dev.criugpu.cli.check.ProcFs.FileStat;
import dev.criugpu.cli.check.ProcFs.Mapping;
import dev.criugpu.cli.check.ProcFs.Task;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * What would stop {@code criu dump} of a running process tree, as far as /proc shows it: io_uring, deleted files over
 * criu's ghost limit, TCP connections, and what NVIDIA device files, shared memory and NCCL's settings say. Reads only
 * /proc (through {@link ProcFs}); asks no GPU and no driver.
 */
public final class JobCheck {
    /**
     * criu's default --ghost-limit: {@code #define DEFAULT_GHOST_LIMIT (1 << 20)} in criu/include/cr_options.h (criu
     * v4.2 source; criu(8), --ghost-limit: "By default, up to 1M file is allowed"). criu 4.2 refuses a deleted file
     * (st_nlink 0) whose st_blocks × 512 exceeds it: criu/files-reg.c, dump_ghost_remap, "Can't dump ghost file %s of
     * %PRIu64 size, increase limit".
     */
    static final long CRIU_DEFAULT_GHOST_LIMIT = 1L << 20;
    static final long MIB = 1L << 20;
    /** Established connections listed one a line; the rest are counted. */
    static final int MAX_CONNECTION_LINES = 32;
    /** NCCL settings reported (ENVIRONMENT: the multi-process setup measured to dump and restore). */
    static final List<String> NCCL_SETTINGS = List.of("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE",
            "NCCL_SOCKET_IFNAME", "NCCL_NVLS_ENABLE");

    public enum Kind {
        PROBLEM("problem"), NEEDS("needs"), NOTE("note");

        final String prefix;

        Kind(String prefix) {
            this.prefix = prefix;
        }
    }

    /** One line of the report; {@code topic} says which check wrote it (io_uring, ghost, tcp, nvidia, nccl, ...). */
    public record Finding(Kind kind, String topic, String text) {
        @Override
        public String toString() {
            return kind.prefix + ": " + text;
        }
    }

    private final ProcFs proc;
    private final String pathEnv;
    private final List<Task> tasks = new ArrayList<>();
    private final Map<Integer, Task> byPid = new LinkedHashMap<>();
    private final List<Finding> findings = new ArrayList<>();
    /** criu dump options suggested, in the order found; value "" for a flag. */
    private final Map<String, String> dumpOptions = new LinkedHashMap<>();
    private final Map<String, String> restoreOptions = new LinkedHashMap<>();

    private JobCheck(ProcFs proc, String pathEnv) {
        this.proc = proc;
        this.pathEnv = pathEnv;
    }

    /**
     * Checks the tree rooted at {@code rootPid} (a process: pass a thread's tgid); {@code pathEnv} is the PATH where
     * criu would look for iptables-restore.
     */
    public static JobCheck run(ProcFs proc, int rootPid, String pathEnv) {
        JobCheck c = new JobCheck(proc, pathEnv);
        for (int pid : proc.tree(rootPid)) {
            proc.task(pid).ifPresent(t -> {
                c.tasks.add(t);
                c.byPid.put(t.pid(), t);
            });
        }
        c.treeNote(rootPid);
        c.ioUring();
        c.ghostFiles();
        c.tcp();
        c.rdma();
        c.nvidia();
        return c;
    }

    public List<Finding> findings() {
        return List.copyOf(findings);
    }

    public List<Task> tasks() {
        return List.copyOf(tasks);
    }

    public long count(Kind kind) {
        return findings.stream().filter(f -> f.kind() == kind).count();
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
        if (!dumpOptions.isEmpty()) {
            sb.append("; options: criu dump -t ").append(rootPid).append(options(dumpOptions));
            if (!restoreOptions.isEmpty()) sb.append(", criu restore").append(options(restoreOptions));
        }
        return sb.toString();
    }

    private static String options(Map<String, String> opts) {
        StringBuilder sb = new StringBuilder();
        opts.forEach((k, v) -> sb.append(' ').append(k).append(v.isEmpty() ? "" : " " + v));
        return sb.toString();
    }

    private static String plural(long n, String word) {
        return n + " " + word + (n == 1 ? "" : word.endsWith("s") ? "es" : "s");
    }

    /** "pid 12" or "pids 12, 13". */
    private static String pids(java.util.Collection<Integer> pids) {
        return (pids.size() == 1 ? "pid " : "pids ") + pids.stream().map(String::valueOf).collect(Collectors.joining(", "));
    }

    private void add(Kind kind, String topic, String text) {
        findings.add(new Finding(kind, topic, text));
    }

    private static String who(Task t) {
        return "pid " + t.pid() + " (" + t.command() + ")";
    }

    private static String shortWho(Task t) {
        return t.pid() + " " + t.comm();
    }

    private void treeNote(int rootPid) {
        String list = tasks.stream().map(t -> t.pid() == rootPid ? shortWho(t) : shortWho(t) + " (child of " + t.ppid() + ")")
                .collect(Collectors.joining(", "));
        add(Kind.NOTE, "tree", plural(tasks.size(), "process") + " in the tree of pid " + rootPid + ": " + list);
        for (Task t : tasks) {
            if (!t.unreadable().isEmpty()) {
                add(Kind.NOTE, "unreadable", "could not read /proc/" + t.pid() + "/" + String.join(", /proc/" + t.pid()
                        + "/", t.unreadable()) + ": what they hold is not checked" + (t.unreadable().stream()
                        .anyMatch(u -> u.contains(ProcFs.DENIED)) ? " (run as root or as the job's user)" : ""));
            }
        }
    }

    // ---------------------------------------------------------------- io_uring

    static final String IO_URING = "anon_inode:[io_uring]";

    private void ioUring() {
        for (Task t : tasks) {
            List<Integer> fds = t.fds().entrySet().stream().filter(e -> e.getValue().equals(IO_URING))
                    .map(Map.Entry::getKey).toList();
            boolean mapped = t.maps().stream().anyMatch(m -> m.path().contains("io_uring"));
            if (fds.isEmpty() && !mapped) continue;
            String where = fds.isEmpty() ? "maps an io_uring ring (" + IO_URING + ") without an fd"
                    : (fds.size() == 1 ? "fd " : "fds ") + fds.stream().map(String::valueOf)
                    .collect(Collectors.joining(", ")) + ": io_uring (" + IO_URING + ")";
            boolean torchrun = String.join(" ", t.argv()).matches(".*(torchrun|torch\\.distributed\\.(run|launch)).*");
            add(Kind.PROBLEM, "io_uring", who(t) + " " + where + ": criu 4.2.1 cannot dump it (\"Unknown shit 600 ("
                    + IO_URING + ")\"); " + (torchrun ? "this is torchrun's elastic agent, which holds one (libuv in its "
                    + "rendezvous store; UV_USE_IO_URING=0 does not help): start the ranks with a plain launcher, "
                    + "which holds none" : "torchrun's elastic agent holds one (libuv); ranks started by a plain "
                    + "launcher hold none"));
        }
    }

    // ---------------------------------------------------------------- ghost files and /dev/shm

    /** A deleted or /dev/shm file the tree holds, by dev:inode where known. */
    private static final class HeldFile {
        final String path;
        final boolean deleted;
        FileStat stat;
        final Set<String> openBy = new LinkedHashSet<>();
        final Set<Integer> mappedBy = new TreeSet<>();

        HeldFile(String path, boolean deleted) {
            this.path = path;
            this.deleted = deleted;
        }

        String holders() {
            List<String> parts = new ArrayList<>();
            if (!openBy.isEmpty()) parts.add("open by " + String.join(", ", openBy));
            if (!mappedBy.isEmpty()) parts.add("mapped by " + pids(mappedBy));
            return String.join(", ", parts);
        }
    }

    private static final String DELETED = " (deleted)";

    /**
     * Files that are not files on a file system criu would copy as ghosts: shared anonymous memory, memfd (criu dumps
     * its contents), SysV shm, aio rings, hugetlb and dma-buf anon files.
     */
    static boolean special(String path) {
        return !path.startsWith("/") || path.startsWith("/memfd:") || path.startsWith("/SYSV")
                || path.startsWith("/dev/zero") || path.startsWith("/[") || path.startsWith("/anon_hugepage")
                || path.startsWith("/dmabuf") || path.startsWith("/dev/nvidia");
    }

    private static String strip(String path) {
        return path.endsWith(DELETED) ? path.substring(0, path.length() - DELETED.length()) : path;
    }

    private static boolean inShm(String path) {
        return path.startsWith("/dev/shm/");
    }

    /** What /proc names as a deleted file or a /dev/shm file criu would copy or record by path. */
    private static boolean mayBeGhostOrShm(String path) {
        return !special(path) && (path.endsWith(DELETED) || inShm(path));
    }

    /** What stat says rules a candidate out: not a regular file, or "deleted" but still linked elsewhere. */
    private static boolean notAGhostOrShmFile(Optional<FileStat> st, boolean deleted) {
        return st.isPresent() && (!st.get().regular() || (deleted && st.get().nlink() > 0));
    }

    private void ghostFiles() {
        Map<String, HeldFile> files = new LinkedHashMap<>();
        for (Task t : tasks) {
            for (Map.Entry<Integer, String> fd : t.fds().entrySet()) {
                String link = fd.getValue();
                if (!mayBeGhostOrShm(link)) continue;
                boolean deleted = link.endsWith(DELETED);
                Optional<FileStat> st = proc.statFd(t.pid(), fd.getKey());
                if (notAGhostOrShmFile(st, deleted)) continue;
                String key = st.map(FileStat::key).orElse(link);
                HeldFile f = files.computeIfAbsent(key, k -> new HeldFile(strip(link), deleted));
                if (f.stat == null) f.stat = st.orElse(null);
                f.openBy.add("pid " + t.pid() + " fd " + fd.getKey());
            }
            for (Mapping m : t.maps()) {
                String path = m.path();
                if (!mayBeGhostOrShm(path)) continue;
                boolean deleted = path.endsWith(DELETED);
                String key = m.dev() + ":" + m.inode();
                HeldFile f = files.get(key);
                if (f == null) {
                    Optional<FileStat> st = proc.statMapping(t.pid(), m);
                    if (notAGhostOrShmFile(st, deleted)) continue;
                    f = new HeldFile(strip(path), deleted);
                    f.stat = st.orElse(null);
                    files.put(key, f);
                }
                f.mappedBy.add(t.pid());
            }
        }
        List<HeldFile> small = new ArrayList<>();
        List<HeldFile> over = new ArrayList<>();
        List<HeldFile> present = new ArrayList<>();
        for (HeldFile f : files.values()) {
            if (!f.deleted) {
                present.add(f);
            } else if (f.stat == null) {
                add(Kind.NOTE, "ghost", "deleted file " + f.path + " (" + f.holders() + "): its size is unknown (stat "
                        + "refused: run as root); criu copies a deleted file into the images only up to --ghost-limit "
                        + "(default 1 MiB)");
            } else if (f.stat.allocated() > CRIU_DEFAULT_GHOST_LIMIT) {
                over.add(f);
            } else {
                small.add(f);
            }
        }
        if (!over.isEmpty()) {
            long largest = over.stream().mapToLong(f -> f.stat.allocated()).max().orElseThrow();
            String limit = ((largest + MIB - 1) / MIB) + "M";
            dumpOptions.put("--ghost-limit", limit);
            for (HeldFile f : over) {
                add(Kind.NEEDS, "ghost", "--ghost-limit " + limit + ": deleted file " + f.path + " (" + f.holders()
                        + ") holds " + mib(f.stat.allocated()) + ", over criu's default ghost limit of 1 MiB (criu "
                        + "copies deleted files into the images" + (inShm(f.path) ? "; NCCL leaves such files in "
                        + "/dev/shm)" : ")"));
            }
        }
        if (!small.isEmpty()) {
            add(Kind.NOTE, "ghost", plural(small.size(), "deleted file") + " within criu's default ghost limit ("
                    + small.stream().map(f -> f.path + " " + mib(f.stat.allocated())).collect(Collectors.joining(", "))
                    + "): criu copies them into the images");
        }
        if (!present.isEmpty()) {
            long total = present.stream().mapToLong(f -> f.stat == null ? 0 : f.stat.size()).sum();
            add(Kind.NOTE, "shm", plural(present.size(), "file") + " in /dev/shm open or mapped, not deleted ("
                    + present.stream().limit(8).map(f -> f.path + " " + (f.stat == null ? "size unknown"
                    : mib(f.stat.size()))).collect(Collectors.joining(", ")) + (present.size() > 8 ? ", ..." : "")
                    + "; " + mib(total) + " in all): criu records them by path and size, not their contents: they must"
                    + " still be there, the same size, where the job is restored");
        }
    }

    static String mib(long bytes) {
        if (bytes < 1024) return bytes + " B";
        if (bytes < MIB) return String.format("%.1f KiB", bytes / 1024.0);
        return String.format("%.1f MiB", bytes / (double) MIB);
    }

    // ---------------------------------------------------------------- TCP

    private record Held(Task task, int fd, TcpSocket socket) {
    }

    private void tcp() {
        Map<String, Map<Long, TcpSocket>> tablesByNs = new LinkedHashMap<>();
        List<Held> held = new ArrayList<>();
        for (Task t : tasks) {
            Map<Long, TcpSocket> table = tablesByNs.computeIfAbsent(t.netns().isEmpty() ? "pid" + t.pid() : t.netns(),
                    k -> readTables(t.pid()));
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
                add(Kind.NEEDS, "tcp", "--skip-in-flight: " + who(h.task()) + " fd " + h.fd() + also + ": listening "
                        + "socket " + s.local() + " has " + s.rxQueue() + " connection(s) not yet accepted (criu drops "
                        + "them with --skip-in-flight, refuses the dump without)");
                dumpOptions.put("--skip-in-flight", "");
            }
            if (!s.connected()) continue;
            connected++;
            allLoopback &= s.loopback();
            if (connected > MAX_CONNECTION_LINES) continue;
            Held peer = byLocal.get(h.task().netns() + " " + s.remote());
            add(Kind.NEEDS, "tcp", "--tcp-established: " + who(h.task()) + " fd " + h.fd() + also + ": TCP "
                    + s.local() + " -> " + s.remote() + " " + s.stateName() + (peer == null ? " (peer outside the tree)"
                    : " (peer in the tree: pid " + peer.task().pid() + " fd " + peer.fd() + ")"));
        }
        if (connected == 0) return;
        if (connected > MAX_CONNECTION_LINES) {
            add(Kind.NEEDS, "tcp", "--tcp-established: " + (connected - MAX_CONNECTION_LINES)
                    + " more connected TCP sockets (not listed)");
        }
        dumpOptions.put("--tcp-established", "");
        restoreOptions.put("--tcp-established", "");
        if (!proc.onPath(pathEnv, "iptables-restore")) {
            add(Kind.NEEDS, "network-lock", "--network-lock skip: iptables-restore is not on this host's PATH, and criu "
                    + "locks TCP connections with iptables by default (--network-lock nftables where criu was built "
                    + "with nftables and the kernel has nf_tables; skip leaves the connections unlocked while criu "
                    + "works, safe when both ends are in the dumped tree)");
            dumpOptions.put("--network-lock", "skip");
            restoreOptions.put("--network-lock", "skip");
        }
        add(Kind.NOTE, "tcp", "criu restores connected sockets at their addresses and ports: "
                + (allLoopback ? "all are on loopback; " : "")
                + "restoring on this host right after the dump fails with \"Address already in use\" until the "
                + "dumped job's ports leave TIME_WAIT (about 60 s); peers outside the tree must still be there");
    }

    private Map<Long, TcpSocket> readTables(int pid) {
        Map<Long, TcpSocket> table = new LinkedHashMap<>();
        for (String name : List.of("tcp", "tcp6")) {
            for (String line : proc.netTable(pid, name)) {
                TcpSocket.parse(line).filter(s -> s.inode() != 0).ifPresent(s -> table.putIfAbsent(s.inode(), s));
            }
        }
        return table;
    }

    // ---------------------------------------------------------------- NVIDIA, shared memory, NCCL

    static boolean nvidiaDevice(String path) {
        return path.startsWith("/dev/nvidia");
    }

    private static Set<String> nvidiaFiles(Task t) {
        Set<String> devices = new TreeSet<>();
        t.fds().values().stream().filter(JobCheck::nvidiaDevice).forEach(p -> devices.add(p.substring(5)));
        t.maps().stream().map(Mapping::path).filter(JobCheck::nvidiaDevice).forEach(p -> devices.add(strip(p)
                .substring(5)));
        return devices;
    }

    private void rdma() {
        for (Task t : tasks) {
            List<String> ib = t.fds().entrySet().stream().filter(e -> e.getValue().startsWith("/dev/infiniband/"))
                    .map(e -> "fd " + e.getKey() + " " + e.getValue()).toList();
            if (!ib.isEmpty()) {
                add(Kind.PROBLEM, "rdma", who(t) + " holds RDMA device files (" + String.join(", ", ib) + "): criu "
                        + "cannot dump InfiniBand/RoCE verbs; NCCL opens them unless NCCL_IB_DISABLE=1");
            }
        }
    }

    private void nvidia() {
        List<Task> cuda = tasks.stream().filter(t -> !nvidiaFiles(t).isEmpty()).toList();
        if (cuda.isEmpty()) return;
        for (Task t : cuda) {
            Set<String> files = nvidiaFiles(t);
            long fds = t.fds().values().stream().filter(JobCheck::nvidiaDevice).count();
            long maps = t.maps().stream().filter(m -> nvidiaDevice(m.path())).count();
            long gpus = files.stream().filter(f -> f.matches("nvidia\\d+")).count();
            String visible = t.env().get("CUDA_VISIBLE_DEVICES");
            add(Kind.NOTE, "nvidia", who(t) + " holds NVIDIA device files: " + String.join(" ", files) + " (" + fds
                    + " fds, " + maps + " mappings" + (visible == null ? "" : "; CUDA_VISIBLE_DEVICES=" + visible) + ")"
                    + (gpus > 1 ? "; files of " + gpus + " GPUs: CUDA opens the file of every GPU it may use, so this "
                    + "alone does not say it uses them all; a process that enabled peer access between its GPUs "
                    + "cannot be restored (README, known limit)" : ""));
        }
        add(Kind.NOTE, "nvidia", "/proc cannot tell which of these tasks have CUDA state and which only inherited the "
                + "files through fork() (the plugin handles both); criu-gpu cuda --get-state --pid PID asks the driver");
        if (cuda.size() > 1) {
            add(Kind.NOTE, "nvidia", "/proc cannot show peer access or CUDA IPC between these tasks: the driver maps "
                    + "every /dev/nvidiactl and /dev/nvidiaN file at offset 0 (it binds each mapping through an ioctl "
                    + "first) and /dev/nvidia-uvm at offset = address, so equal offsets in two tasks mean nothing; the "
                    + "hints are host memory shared between them and NCCL's settings");
            sharedMemory(cuda);
        }
        nccl(cuda);
    }

    /**
     * Shared memory (/dev/shm, memfd, SysV) mapped by two or more tasks of {@code cuda} that fork alone does not
     * explain: inherited memory sits at the same address in a task and an ancestor of it.
     */
    private void sharedMemory(List<Task> cuda) {
        Map<String, Map<Integer, Mapping>> byFile = new LinkedHashMap<>();
        for (Task t : cuda) {
            for (Mapping m : t.maps()) {
                String p = m.path();
                if (!m.shared() || !(inShm(p) || p.startsWith("/memfd:") || p.startsWith("/SYSV"))) continue;
                byFile.computeIfAbsent(m.dev() + ":" + m.inode(), k -> new LinkedHashMap<>()).putIfAbsent(t.pid(), m);
            }
        }
        for (Map<Integer, Mapping> users : byFile.values()) {
            List<Integer> independent = users.keySet().stream().filter(p -> !inherited(p, users)).toList();
            if (independent.size() < 2) continue;
            Mapping any = users.values().iterator().next();
            add(Kind.NOTE, "ipc", pids(independent) + " (all holding NVIDIA files) map the same shared memory "
                    + strip(any.path()) + ", not inherited through fork(): a hint that they share device memory too "
                    + "(CUDA IPC: NCCL's P2P and SHM transports, torch.multiprocessing's CUDA tensors), which the "
                    + "driver cannot restore");
        }
    }

    /** Whether {@code pid} got its mapping of the file through fork(): an ancestor maps it at the same address. */
    private boolean inherited(int pid, Map<Integer, Mapping> users) {
        long start = users.get(pid).start();
        return users.entrySet().stream().anyMatch(e -> e.getKey() != pid && e.getValue().start() == start
                && ancestor(e.getKey(), pid));
    }

    private boolean ancestor(int ancestor, int pid) {
        Task t = byPid.get(pid);
        while (t != null && t.ppid() != 0) {
            if (t.ppid() == ancestor) return true;
            t = byPid.get(t.ppid());
        }
        return false;
    }

    private static boolean ncclLoaded(Task t) {
        return t.maps().stream().anyMatch(m -> m.path().contains("libnccl"));
    }

    private static boolean set(Task t, String name, String value) {
        return value.equals(t.env().get(name));
    }

    /**
     * Whether {@code t} is its parent fork()ed without an exec since (a DataLoader worker, say): the vDSO sits where
     * the parent's does. exec places it anew (at random unless address randomization is off).
     */
    private boolean forkOfParent(Task t) {
        Task parent = byPid.get(t.ppid());
        if (parent == null) return false;
        Optional<Long> mine = vdso(t), theirs = vdso(parent);
        return mine.isPresent() && mine.equals(theirs);
    }

    private static Optional<Long> vdso(Task t) {
        return t.maps().stream().filter(m -> m.path().equals("[vdso]")).map(Mapping::start).findFirst();
    }

    private void nccl(List<Task> cuda) {
        List<Task> withNccl = cuda.stream().filter(t -> ncclLoaded(t)
                || t.env().keySet().stream().anyMatch(k -> k.startsWith("NCCL_"))).toList();
        List<Task> ranks = withNccl.stream().filter(t -> !forkOfParent(t)).toList();
        List<Integer> forks = withNccl.stream().filter(this::forkOfParent).map(Task::pid).toList();
        if (ranks.isEmpty()) return;
        if (!forks.isEmpty()) {
            add(Kind.NOTE, "nccl", pids(forks) + ": fork()ed from a parent without an exec since (DataLoader "
                    + "workers, say), not counted as NCCL ranks");
        }
        Map<String, List<Integer>> bySettings = new LinkedHashMap<>();
        for (Task r : ranks) {
            String s = NCCL_SETTINGS.stream().map(k -> k + "=" + Objects.requireNonNullElse(r.env().get(k), "(unset)"))
                    .collect(Collectors.joining(" "));
            bySettings.computeIfAbsent(s, k -> new ArrayList<>()).add(r.pid());
        }
        bySettings.forEach((s, group) -> add(Kind.NOTE, "nccl", "NCCL settings of " + pids(group) + ": " + s
                + " (/proc/PID/environ: the environment at exec; what the program sets itself later is not seen)"));
        if (ranks.size() < 2) return;
        String rankList = ranks.stream().map(t -> String.valueOf(t.pid())).collect(Collectors.joining(", "));
        String measured = "a multi-process NCCL job was measured to dump and restore with NCCL_P2P_DISABLE=1 "
                + "NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0";
        List<Integer> p2p = ranks.stream().filter(t -> !set(t, "NCCL_P2P_DISABLE", "1")).map(Task::pid).toList();
        if (!p2p.isEmpty()) {
            add(Kind.PROBLEM, "nccl", "NCCL ranks " + rankList + " may connect through NCCL's P2P transport (CUDA IPC "
                    + "and peer access between their GPUs): NCCL_P2P_DISABLE is not 1 in " + pids(p2p)
                    + "; the driver cannot restore peer access (README, known limit): start the job with "
                    + "NCCL_P2P_DISABLE=1 (" + measured + ")");
        }
        List<Integer> shm = ranks.stream().filter(t -> !set(t, "NCCL_SHM_DISABLE", "1")).map(Task::pid).toList();
        if (!shm.isEmpty()) {
            add(Kind.PROBLEM, "nccl", "NCCL ranks " + rankList + " may connect through NCCL's SHM transport (host "
                    + "memory shared between ranks and registered with CUDA): NCCL_SHM_DISABLE is not 1 in "
                    + pids(shm) + ": start the job with NCCL_SHM_DISABLE=1 (" + measured + ")");
        }
        List<Integer> nvls = ranks.stream().filter(t -> !set(t, "NCCL_NVLS_ENABLE", "0")).map(Task::pid).toList();
        if (!nvls.isEmpty()) {
            add(Kind.NOTE, "nccl", "NCCL_NVLS_ENABLE is not 0 in " + pids(nvls) + ": on GPUs linked by NVSwitch "
                    + "NCCL uses NVLink SHARP multicast memory, never tried with a checkpoint here; set "
                    + "NCCL_NVLS_ENABLE=0");
        }
    }
}

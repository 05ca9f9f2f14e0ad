package dev.criugpu.cli.check;

import dev.criugpu.cli.check.JobCheck.Kind;
import dev.criugpu.cli.check.ProcFs.FileStat;
import dev.criugpu.cli.check.ProcFs.Mapping;
import dev.criugpu.cli.check.ProcFs.Task;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static dev.criugpu.cli.check.ProcPaths.DELETED;
import static dev.criugpu.cli.check.ProcPaths.inShm;
import static dev.criugpu.cli.check.ProcPaths.special;
import static dev.criugpu.cli.check.ProcPaths.strip;
import static dev.criugpu.cli.check.Words.MIB;
import static dev.criugpu.cli.check.Words.mib;
import static dev.criugpu.cli.check.Words.pids;
import static dev.criugpu.cli.check.Words.plural;

/**
 * Deleted files the tree holds (criu copies them into the images, up to its ghost limit) and undeleted /dev/shm files
 * (criu records them by path and size), each file once however many fds and mappings name it.
 */
final class GhostFileCheck implements Check {
    /**
     * criu's default --ghost-limit: {@code #define DEFAULT_GHOST_LIMIT (1 << 20)} in criu/include/cr_options.h (criu
     * v4.2 source; criu(8), --ghost-limit: "By default, up to 1M file is allowed"). criu 4.2 refuses a deleted file
     * (st_nlink 0) whose st_blocks × 512 exceeds it: criu/files-reg.c, dump_ghost_remap, "Can't dump ghost file %s of
     * %PRIu64 size, increase limit".
     */
    static final long CRIU_DEFAULT_GHOST_LIMIT = 1L << 20;

    /** A deleted or /dev/shm file the tree holds, by dev:inode where known. */
    private static final class HeldFile {
        final String path;
        final boolean deleted;
        FileStat stat;
        final Set<String> openBy = new LinkedHashSet<>();
        final Set<Integer> mappedBy = new TreeSet<>();
        final Set<Integer> pids = new TreeSet<>();

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

    /** What /proc names as a deleted file or a /dev/shm file criu would copy or record by path. */
    private static boolean mayBeGhostOrShm(String path) {
        return !special(path) && (path.endsWith(DELETED) || inShm(path));
    }

    /** What stat says rules a candidate out: not a regular file, or "deleted" but still linked elsewhere. */
    private static boolean notAGhostOrShmFile(Optional<FileStat> st, boolean deleted) {
        return st.isPresent() && (!st.get().regular() || (deleted && st.get().nlink() > 0));
    }

    @Override
    public void run(JobTree tree, Findings out) {
        List<HeldFile> small = new ArrayList<>();
        List<HeldFile> over = new ArrayList<>();
        List<HeldFile> present = new ArrayList<>();
        List<HeldFile> unknown = new ArrayList<>();
        for (HeldFile f : held(tree)) {
            if (!f.deleted) {
                present.add(f);
            } else if (f.stat == null) {
                unknown.add(f);
            } else if (f.stat.allocated() > CRIU_DEFAULT_GHOST_LIMIT) {
                over.add(f);
            } else {
                small.add(f);
            }
        }
        String unknownWhy = "(stat refused: run as root); criu copies a deleted file into the images only up to "
                + "--ghost-limit (default 1 MiB)";
        out.addGrouped(Kind.NOTE, "ghost", "", unknown.stream().map(f -> "deleted file " + f.path + " (" + f.holders()
                + "): its size is unknown " + unknownWhy).toList(), unknown.size() + " deleted files (held by "
                + pids(holderPids(unknown)) + "): their sizes are unknown " + unknownWhy);
        if (!over.isEmpty()) {
            HeldFile largest = over.stream().max(Comparator.comparingLong(f -> f.stat.allocated())).orElseThrow();
            String limit = ((largest.stat.allocated() + MIB - 1) / MIB) + "M";
            out.dumpOption("--ghost-limit", limit);
            boolean shm = over.stream().anyMatch(f -> inShm(f.path));
            String why = "over criu's default ghost limit of 1 MiB (criu copies deleted files into the images"
                    + (shm ? "; NCCL leaves such files in /dev/shm)" : ")");
            out.addGrouped(Kind.NEEDS, "ghost", "--ghost-limit " + limit + ": ", over.stream().map(f -> "deleted file "
                    + f.path + " (" + f.holders() + ") holds " + mib(f.stat.allocated()) + ", " + (over.size() == 1
                    ? why : "over criu's default ghost limit of 1 MiB")).toList(), over.size() + " deleted files (held "
                    + "by " + pids(holderPids(over)) + ") hold " + mib(over.stream().mapToLong(f -> f.stat.allocated())
                    .sum()) + " in all, the largest " + largest.path + " " + mib(largest.stat.allocated()) + ", " + why);
        }
        if (!small.isEmpty()) {
            out.add(Kind.NOTE, "ghost", plural(small.size(), "deleted file") + " within criu's default ghost limit ("
                    + small.stream().map(f -> f.path + " " + mib(f.stat.allocated())).collect(Collectors.joining(", "))
                    + "): criu copies them into the images");
        }
        if (!present.isEmpty()) {
            long total = present.stream().mapToLong(f -> f.stat == null ? 0 : f.stat.size()).sum();
            out.add(Kind.NOTE, "shm", plural(present.size(), "file") + " in /dev/shm open or mapped, not deleted ("
                    + present.stream().limit(8).map(f -> f.path + " " + (f.stat == null ? "size unknown"
                    : mib(f.stat.size()))).collect(Collectors.joining(", ")) + (present.size() > 8 ? ", ..." : "")
                    + "; " + mib(total) + " in all): criu records them by path and size, not their contents: they must"
                    + " still be there, the same size, where the job is restored");
        }
    }

    private static Set<Integer> holderPids(List<HeldFile> files) {
        Set<Integer> all = new TreeSet<>();
        files.forEach(f -> all.addAll(f.pids));
        return all;
    }

    /** The candidate files of the tree's fds and mappings, in the order first seen. */
    private static Iterable<HeldFile> held(JobTree tree) {
        Map<String, HeldFile> files = new LinkedHashMap<>();
        for (Task t : tree.tasks) {
            for (Map.Entry<Integer, String> fd : t.fds().entrySet()) {
                String link = fd.getValue();
                if (!mayBeGhostOrShm(link)) continue;
                boolean deleted = link.endsWith(DELETED);
                Optional<FileStat> st = tree.proc.statFd(t.pid(), fd.getKey());
                if (notAGhostOrShmFile(st, deleted)) continue;
                String key = st.map(FileStat::key).orElse(link);
                HeldFile f = files.computeIfAbsent(key, k -> new HeldFile(strip(link), deleted));
                if (f.stat == null) f.stat = st.orElse(null);
                f.openBy.add("pid " + t.pid() + " fd " + fd.getKey());
                f.pids.add(t.pid());
            }
            for (Mapping m : t.maps()) {
                String path = m.path();
                if (!mayBeGhostOrShm(path)) continue;
                boolean deleted = path.endsWith(DELETED);
                String key = m.dev() + ":" + m.inode();
                HeldFile f = files.get(key);
                if (f == null) {
                    Optional<FileStat> st = tree.proc.statMapping(t.pid(), m);
                    if (notAGhostOrShmFile(st, deleted)) continue;
                    f = new HeldFile(strip(path), deleted);
                    f.stat = st.orElse(null);
                    files.put(key, f);
                }
                f.mappedBy.add(t.pid());
                f.pids.add(t.pid());
            }
        }
        return files.values();
    }
}

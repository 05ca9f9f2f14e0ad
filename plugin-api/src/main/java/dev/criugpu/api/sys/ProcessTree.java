package dev.criugpu.api.sys;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The processes of a running tree, as criu will find them: the root, then its descendants, parents before children.
 * A child belongs to the thread that forked it, so every thread's /proc/PID/task/TID/children is read; a kernel
 * without CONFIG_PROC_CHILDREN (no such files) is served by one scan of every process's PPid. A process that ends
 * meanwhile is simply missing (or listed without children).
 */
public final class ProcessTree {
    private final Path proc;

    public ProcessTree(Path proc) {
        this.proc = proc;
    }

    /** {@code root} and its descendants, from the real /proc. */
    public static List<Integer> of(int root) {
        return new ProcessTree(Path.of("/proc")).list(root);
    }

    public List<Integer> list(int root) {
        Set<Integer> seen = new LinkedHashSet<>();
        Deque<Integer> todo = new ArrayDeque<>(List.of(root));
        Map<Integer, List<Integer>> byParent = null;
        while (!todo.isEmpty()) {
            int pid = todo.poll();
            if (!seen.add(pid)) continue;
            Optional<List<Integer>> kids = childrenFiles(pid);
            if (kids.isEmpty()) {
                if (byParent == null) byParent = scanParents();
                kids = Optional.of(byParent.getOrDefault(pid, List.of()));
            }
            todo.addAll(kids.get());
        }
        return List.copyOf(seen);
    }

    /** The children of every thread of {@code pid}; empty when the kernel keeps no children files. */
    private Optional<List<Integer>> childrenFiles(int pid) {
        List<Integer> kids = new ArrayList<>();
        boolean any = false;
        try (DirectoryStream<Path> threads = Files.newDirectoryStream(proc.resolve(pid + "/task"))) {
            for (Path t : threads) {
                Path children = t.resolve("children");
                if (!Files.exists(children)) continue;
                any = true;
                try {
                    for (String k : Files.readString(children).trim().split("\\s+")) {
                        if (!k.isEmpty()) kids.add(Integer.parseInt(k));
                    }
                } catch (IOException e) {
                    // the thread ended between listing and reading
                }
            }
        } catch (IOException e) {
            return Optional.of(List.of()); // the process ended
        }
        return any ? Optional.of(kids) : Optional.empty();
    }

    private Map<Integer, List<Integer>> scanParents() {
        Map<Integer, List<Integer>> byParent = new HashMap<>();
        try (DirectoryStream<Path> all = Files.newDirectoryStream(proc, "[0-9]*")) {
            for (Path p : all) {
                int pid = Integer.parseInt(p.getFileName().toString());
                parentOf(p).ifPresent(pp -> byParent.computeIfAbsent(pp, k -> new ArrayList<>()).add(pid));
            }
        } catch (IOException | NumberFormatException e) {
            // what was found so far is all there is
        }
        byParent.values().forEach(l -> l.sort(null));
        return byParent;
    }

    private static Optional<Integer> parentOf(Path procPid) {
        try {
            for (String line : Files.readAllLines(procPid.resolve("status"))) {
                if (line.startsWith("PPid:")) return Optional.of(Integer.parseInt(line.substring(5).trim()));
            }
        } catch (IOException | NumberFormatException e) {
            // ended, or not a process directory
        }
        return Optional.empty();
    }
}

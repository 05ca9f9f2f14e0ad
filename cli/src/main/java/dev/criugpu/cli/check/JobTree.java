package dev.criugpu.cli.check;

import dev.criugpu.cli.check.ProcFs.Task;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The process tree a check looks at, as /proc showed it once, and where the reads came from. */
final class JobTree {
    final ProcFs proc;
    final int rootPid;
    /** The PATH where criu would look for iptables-restore, and where check looks for criu. */
    final String pathEnv;
    /** Where /sys, /lib/modules and /boot are looked for: "/" but in tests. */
    final Path host;
    final List<Task> tasks;
    private final Map<Integer, Task> byPid = new LinkedHashMap<>();

    JobTree(ProcFs proc, Path host, int rootPid, String pathEnv) {
        this.proc = proc;
        this.host = host;
        this.rootPid = rootPid;
        this.pathEnv = pathEnv;
        List<Task> read = new ArrayList<>();
        for (int pid : proc.tree(rootPid)) {
            proc.task(pid).ifPresent(t -> {
                read.add(t);
                byPid.put(t.pid(), t);
            });
        }
        this.tasks = List.copyOf(read);
    }

    Task task(int pid) {
        return byPid.get(pid);
    }

    boolean ancestor(int ancestor, int pid) {
        Task t = byPid.get(pid);
        while (t != null && t.ppid() != 0) {
            if (t.ppid() == ancestor) return true;
            t = byPid.get(t.ppid());
        }
        return false;
    }

    /** The tasks that hold NVIDIA device files (open or mapped). */
    List<Task> nvidiaHolders() {
        return tasks.stream().filter(t -> !ProcPaths.nvidiaFiles(t).isEmpty()).toList();
    }
}

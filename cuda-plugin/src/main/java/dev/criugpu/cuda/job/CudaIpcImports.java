package dev.criugpu.cuda.job;

import dev.criugpu.api.sys.ProcLines;
import dev.criugpu.api.sys.Tasks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * CUDA tasks that opened another process's CUDA IPC events, and so its GPU memory: what {@code torch.multiprocessing}
 * does with every CUDA tensor it sends (and DataLoader workers that return CUDA tensors). Driver 580 checkpoints such
 * an importer but cannot return it (CUDA error 1, measured: the job never answers again), so it is refused before any
 * lock. The CUDA runtime keeps an IPC event in shared memory that the exporting process creates as
 * {@code /dev/shm/cuda.shm.DEVICE.PID.N} (PID in hex, as that process sees itself) and every opener maps: a task mapping
 * one whose PID is not its own imports. A child fork()ed without an exec inherits its parent's mappings and is not
 * counted for the parent's files (its vDSO sits where its parent's does). Raw {@code cuIpcOpenMemHandle} without events
 * and cuMem handles passed by fd leave no such file: those stay invisible here.
 */
public final class CudaIpcImports {
    /** One import: the task, the pid its exporter has in their pid namespace, the file that shows it. */
    public record Import(int pid, int exporterNsPid, String file) {
    }

    private static final String PREFIX = "/dev/shm/cuda.shm.";

    private CudaIpcImports() {
    }

    /** The pid (as its owner saw itself) that made {@code path}, when it is a CUDA IPC event file. */
    static Optional<Integer> owner(String path) {
        if (!path.startsWith(PREFIX)) return Optional.empty();
        String[] f = path.substring(PREFIX.length()).split("\\.");
        if (f.length != 3) return Optional.empty();
        try {
            return Optional.of(Integer.parseInt(f[1], 16));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** The imports of the tasks {@code pids} read from {@code proc}, one per task and exporter. */
    public static List<Import> of(Path proc, List<Integer> pids) {
        List<Import> found = new ArrayList<>();
        for (int pid : pids) {
            Path dir = proc.resolve(Integer.toString(pid));
            int self;
            int parentNsPid;
            try {
                String status = Files.readString(dir.resolve("status"));
                self = Tasks.innermostPid(status).orElse(pid);
                parentNsPid = parentNsPid(proc, status);
            } catch (IOException e) {
                continue; // ended
            }
            Set<String> files = eventFiles(dir);
            Optional<Long> vdso = files.isEmpty() ? Optional.empty() : vdso(dir);
            Set<Integer> exporters = new LinkedHashSet<>();
            for (String file : files) {
                int owner = owner(file).orElseThrow();
                if (owner == self || !exporters.add(owner)) continue;
                if (owner == parentNsPid && vdso.isPresent() && vdso.equals(vdso(parentDir(proc, dir)))) continue;
                found.add(new Import(pid, owner, file));
            }
        }
        return found;
    }

    /** One line per import, naming both pids and the mechanism; {@code treePid} finds the exporter's pid as criu sees it. */
    public static List<String> blockers(List<Import> imports, java.util.function.IntFunction<Optional<Integer>> treePid) {
        return imports.stream().map(i -> "pid " + i.pid() + " imports GPU memory of " + treePid.apply(i.exporterNsPid())
                .map(p -> "pid " + p).orElse("a process outside the tree (pid " + i.exporterNsPid() + " in its namespace)")
                + " through CUDA IPC (it maps " + i.file() + ", that process's IPC event: torch.multiprocessing sends "
                + "CUDA tensors so): driver 580 cannot return an importer once checkpointed (CUDA error 1), so the dump "
                + "would lose the job").toList();
    }

    /** The pid (as criu sees it) of the task among {@code pids} that sees itself as the pid asked for. */
    public static java.util.function.IntFunction<Optional<Integer>> inTree(Path proc, List<Integer> pids) {
        java.util.Map<Integer, Integer> byNsPid = new java.util.HashMap<>();
        for (int pid : pids) {
            try {
                byNsPid.putIfAbsent(Tasks.innermostPid(Files.readString(proc.resolve(pid + "/status"))).orElse(pid), pid);
            } catch (IOException e) {
                // ended
            }
        }
        return nsPid -> Optional.ofNullable(byNsPid.get(nsPid));
    }

    private static Set<String> eventFiles(Path dir) {
        Set<String> files = new LinkedHashSet<>();
        try {
            ProcLines.forEach(dir.resolve("maps"), ProcLines.MAPS_LINE_LIMIT, line -> {
                int at = line.indexOf(PREFIX);
                if (at < 0) return;
                String path = line.substring(at);
                if (path.endsWith(" (deleted)")) path = path.substring(0, path.length() - 10);
                if (owner(path).isPresent()) files.add(path);
            });
        } catch (IOException e) {
            // ended meanwhile
        }
        return files;
    }

    private static Optional<Long> vdso(Path dir) {
        long[] start = {-1};
        try {
            ProcLines.forEach(dir.resolve("maps"), ProcLines.MAPS_LINE_LIMIT, line -> {
                if (start[0] < 0 && line.endsWith("[vdso]")) start[0] = Long.parseUnsignedLong(line.substring(0, line.indexOf('-')), 16);
            });
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
        return start[0] < 0 ? Optional.empty() : Optional.of(start[0]);
    }

    private static Path parentDir(Path proc, Path dir) {
        try {
            return proc.resolve(Integer.toString(ppid(Files.readString(dir.resolve("status")))));
        } catch (IOException e) {
            return dir.resolveSibling("0");
        }
    }

    private static int parentNsPid(Path proc, String status) {
        try {
            return Tasks.innermostPid(Files.readString(proc.resolve(ppid(status) + "/status"))).orElse(ppid(status));
        } catch (IOException e) {
            return -1;
        }
    }

    private static int ppid(String status) {
        for (String line : status.split("\n")) {
            if (line.startsWith("PPid:")) return Integer.parseInt(line.substring(5).trim());
        }
        return -1;
    }
}

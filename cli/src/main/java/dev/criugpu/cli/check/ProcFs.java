package dev.criugpu.cli.check;

import dev.criugpu.api.sys.ProcEntries;
import dev.criugpu.api.sys.ProcLines;
import dev.criugpu.api.sys.ProcessTree;

import dev.criugpu.cli.sys.LibcStat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What {@code criu-gpu check} reads: /proc (or a tree laid out like it, for tests), nothing else. Every read tolerates a
 * task that exits meanwhile.
 */
public class ProcFs {
    /**
     * How much of one task's maps {@link Task#maps} keeps, as {@link #cost}: maps has no bound its owner cannot raise,
     * and a CUDA process's few thousand NVIDIA mappings take a tenth of this.
     */
    static final int MAPS_KEPT_BYTES = 4 << 20;
    private final Path root;

    public ProcFs(Path root) {
        this.root = root;
    }

    public static ProcFs live() {
        return new ProcFs(Path.of("/proc"));
    }

    Path root() {
        return root;
    }

    /** One mapping of /proc/PID/maps. {@code path} is empty for anonymous memory. */
    public record Mapping(long start, long end, String perms, long offset, String dev, long inode, String path) {
        /** Parses one maps line: {@code 7f00-7f10 rw-s 00000000 00:05 1024 /dev/nvidiactl}. */
        public static Optional<Mapping> parse(String line) {
            // by hand, not String.split: check parses every line of a maps that can be hundreds of MB (3 s saved in 238)
            String[] f = new String[5];
            int i = 0;
            for (int k = 0; k < f.length; k++) {
                while (i < line.length() && line.charAt(i) <= ' ') i++;
                int from = i;
                while (i < line.length() && line.charAt(i) > ' ') i++;
                if (from == i) return Optional.empty();
                f[k] = line.substring(from, i);
            }
            int dash = f[0].indexOf('-');
            if (dash < 0) return Optional.empty();
            try {
                return Optional.of(new Mapping(Long.parseUnsignedLong(f[0].substring(0, dash), 16),
                        Long.parseUnsignedLong(f[0].substring(dash + 1), 16), f[1], Long.parseUnsignedLong(f[2], 16),
                        f[3], Long.parseLong(f[4]), line.substring(i).trim()));
            } catch (NumberFormatException e) {
                return Optional.empty();
            }
        }

        boolean shared() {
            return perms.length() > 3 && perms.charAt(3) == 's';
        }

        /** The name of the entry in /proc/PID/map_files. */
        String mapFilesName() {
            return Long.toHexString(start) + "-" + Long.toHexString(end);
        }
    }

    /**
     * What stat(2) says of a file an fd or a mapping names. {@code allocated} is st_blocks × 512, what criu 4.2
     * compares with its ghost limit; {@code dev} is "major:minor" in hex as /proc/PID/maps writes it.
     */
    public record FileStat(long size, long allocated, long nlink, String dev, long inode, boolean regular) {
        String key() {
            return dev + ":" + inode;
        }
    }

    /** A process (thread-group leader) of the tree. Lists are empty where /proc refused them; see {@code unreadable}. */
    public record Task(int pid, int ppid, String comm, List<String> argv, Map<Integer, String> fds,
                       List<Mapping> maps, Map<String, String> env, String netns, List<String> unreadable) {
        /** "python3" or, where the command line is readable, "python3: python3 train.py --x" (cut at 100 chars). */
        String command() {
            String line = String.join(" ", argv);
            if (line.isEmpty()) return comm;
            return comm + ": " + (line.length() > 100 ? line.substring(0, 97) + "..." : line);
        }
    }

    /** Whether /proc/PID exists. */
    public boolean exists(int pid) {
        return Files.isDirectory(root.resolve(Integer.toString(pid)));
    }

    /** The thread-group id of {@code pid} (itself for a process, its process for a thread), when known. */
    public OptionalLong tgid(int pid) {
        return statusField(pid, "Tgid:");
    }

    private OptionalLong statusField(int pid, String name) {
        try {
            for (String line : Files.readAllLines(root.resolve(pid + "/status"))) {
                if (line.startsWith(name)) return OptionalLong.of(Long.parseLong(line.substring(name.length()).trim()));
            }
        } catch (IOException | NumberFormatException e) {
            // gone or unreadable
        }
        return OptionalLong.empty();
    }

    /** The root and its descendants, parents before children, threads aside (plugin-api's ProcessTree over this /proc). */
    public List<Integer> tree(int rootPid) {
        return new ProcessTree(root).list(rootPid);
    }

    /** Everything check needs of one process, or empty when it has gone. */
    public Optional<Task> task(int pid) {
        Path dir = root.resolve(Integer.toString(pid));
        if (!Files.isDirectory(dir)) return Optional.empty();
        List<String> unreadable = new ArrayList<>();
        String comm = "?";
        try {
            comm = Files.readString(dir.resolve("comm")).strip();
        } catch (IOException e) {
            if (!Files.isDirectory(dir)) return Optional.empty();
        }
        List<String> argv = new ArrayList<>();
        try {
            for (String a : entries(dir.resolve("cmdline"), ProcEntries.CMDLINE_LIMIT, "cmdline", unreadable)) {
                if (!a.isEmpty()) argv.add(a);
            }
        } catch (IOException e) {
            // a kernel thread or gone: comm names it
        }
        Map<Integer, String> fds = new TreeMap<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir.resolve("fd"))) {
            for (Path fd : ds) {
                try {
                    fds.put(Integer.parseInt(fd.getFileName().toString()), Files.readSymbolicLink(fd).toString());
                } catch (IOException | NumberFormatException e) {
                    // closed meanwhile
                }
            }
        } catch (IOException e) {
            unreadable.add("fd (" + reason(e) + ")");
        }
        KeptMappings maps = new KeptMappings();
        try {
            ProcLines.forEach(dir.resolve("maps"), ProcLines.MAPS_LINE_LIMIT, maps);
            if (maps.cut) unreadable.add("maps (more than " + (MAPS_KEPT_BYTES >> 10) + " KiB of mappings check reads: "
                    + "the rest not checked)");
        } catch (IOException e) {
            unreadable.add("maps (" + reason(e) + ")");
        }
        Map<String, String> env = new LinkedHashMap<>();
        try {
            for (String kv : entries(dir.resolve("environ"), ProcEntries.ENVIRON_LIMIT, "environ", unreadable)) {
                int eq = kv.indexOf('=');
                if (eq > 0) env.putIfAbsent(kv.substring(0, eq), kv.substring(eq + 1));
            }
        } catch (IOException e) {
            unreadable.add("environ (" + reason(e) + ")");
        }
        String netns = "";
        try {
            netns = Files.readSymbolicLink(dir.resolve("ns/net")).toString();
        } catch (IOException e) {
            // one table per task then
        }
        int ppid = (int) statusField(pid, "PPid:").orElse(0);
        return Optional.of(new Task(pid, ppid, comm, List.copyOf(argv), fds, List.copyOf(maps.kept), env, netns,
                List.copyOf(unreadable)));
    }

    /** About the heap a kept mapping takes: its name and the record around it. */
    static long cost(Mapping m) {
        return m.path().length() + 128L;
    }

    /** The mappings some check reads ({@link ProcPaths#readByACheck}), up to {@link #MAPS_KEPT_BYTES}. */
    private static final class KeptMappings implements Consumer<String> {
        final List<Mapping> kept = new ArrayList<>();
        long bytes;
        boolean cut;

        @Override
        public void accept(String line) {
            Optional<Mapping> m = Mapping.parse(line).filter(x -> ProcPaths.readByACheck(x.path()));
            if (m.isEmpty() || cut) return;
            bytes += cost(m.get());
            if (bytes > MAPS_KEPT_BYTES) {
                cut = true;
            } else {
                kept.add(m.get());
            }
        }
    }

    static final String DENIED = "permission denied";

    /**
     * The NUL-separated entries of {@code file} within {@code limit} bytes ({@link ProcEntries}); when it holds more,
     * {@code cuts} gets "NAME (longer than N KiB: read that far, the rest not checked)".
     */
    static List<String> entries(Path file, int limit, String name, List<String> cuts) throws IOException {
        ProcEntries e = ProcEntries.read(file, limit);
        if (e.cut()) cuts.add(name + " (longer than " + (limit >> 10) + " KiB: read that far, the rest not checked)");
        return e.entries();
    }

    private static String reason(IOException e) {
        if (e instanceof java.nio.file.AccessDeniedException) return DENIED;
        if (e instanceof NoSuchFileException) return "gone";
        String m = String.valueOf(e.getMessage());
        return m.substring(m.lastIndexOf(": ") + 1).strip();
    }

    /** The lines of /proc/PID/net/{@code name} (tcp, tcp6): the tables of the task's network namespace. */
    public List<String> netTable(int pid, String name) {
        try {
            return Files.readAllLines(root.resolve(pid + "/net/" + name));
        } catch (IOException e) {
            return List.of();
        }
    }

    /** stat(2) of what fd {@code fd} of {@code pid} refers to (following the magic link). */
    public Optional<FileStat> statFd(int pid, int fd) {
        return stat(root.resolve(pid + "/fd/" + fd));
    }

    /** stat(2) of the file mapped at {@code m} (/proc/PID/map_files: root, or CAP_CHECKPOINT_RESTORE, only). */
    public Optional<FileStat> statMapping(int pid, Mapping m) {
        return stat(root.resolve(pid + "/map_files/" + m.mapFilesName()));
    }

    /** Whether an executable named {@code name} is in one of the folders of {@code path} (a PATH value). */
    public boolean onPath(String path, String name) {
        return findOnPath(path, name).isPresent();
    }

    /** The first executable named {@code name} in the folders of {@code path} (a PATH value), as the shell finds it. */
    public Optional<Path> findOnPath(String path, String name) {
        for (String dir : path.split(":")) {
            if (dir.isEmpty()) continue;
            Path p = Path.of(dir, name);
            if (Files.isRegularFile(p) && Files.isExecutable(p)) return Optional.of(p);
        }
        return Optional.empty();
    }

    private static final Pattern NVRM_VERSION = Pattern.compile("NVRM version:.*?\\s(\\d+\\.\\d+(?:\\.\\d+)?)\\s");

    /** The NVIDIA kernel module's version as /proc/driver/nvidia/version names it (580.159.04); empty without it. */
    public Optional<String> nvidiaDriverVersion() {
        try {
            Matcher m = NVRM_VERSION.matcher(String.join("\n", Files.readAllLines(root.resolve("driver/nvidia/version"))) + "\n");
            return m.find() ? Optional.of(m.group(1)) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The names (comm) of the threads of process {@code pid}, as /proc/PID/task/TID/comm gives them; empty when gone. */
    public List<String> threadNames(int pid) {
        List<String> names = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(root.resolve(pid + "/task"))) {
            for (Path t : ds) {
                try {
                    names.add(Files.readString(t.resolve("comm")).strip());
                } catch (IOException e) {
                    // the thread ended meanwhile
                }
            }
        } catch (IOException e) {
            // gone or unreadable
        }
        return names;
    }

    /**
     * One stat(2) of {@code p}: libc's, which gives st_blocks too; without it, the JDK's unix attributes, with the
     * length standing in for the allocated size.
     */
    protected Optional<FileStat> stat(Path p) {
        if (!LibcStat.available()) return statByJdk(p);
        return LibcStat.of(p).map(st -> fileStat(st.size(), st.blocks() * 512, st.nlink(), st.dev(), st.inode(), st.mode()));
    }

    private static Optional<FileStat> statByJdk(Path p) {
        try {
            Map<String, Object> a = Files.readAttributes(p, "unix:size,nlink,dev,ino,mode");
            long size = (Long) a.get("size");
            return Optional.of(fileStat(size, size, ((Integer) a.get("nlink")).longValue(), (Long) a.get("dev"),
                    (Long) a.get("ino"), (Integer) a.get("mode")));
        } catch (IOException | UnsupportedOperationException | ClassCastException e) {
            return Optional.empty();
        }
    }

    /** {@code dev} is glibc's dev_t encoding; /proc/PID/maps writes it as "major:minor" in hex. */
    private static FileStat fileStat(long size, long allocated, long nlink, long dev, long inode, int mode) {
        long major = ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL);
        long minor = (dev & 0xff) | ((dev >>> 12) & ~0xffL);
        return new FileStat(size, allocated, nlink, String.format("%02x:%02x", major, minor), inode,
                (mode & 0xf000) == 0x8000);
    }
}

package dev.criugpu.cuda.gpu;

import dev.criugpu.api.sys.ProcEntries;
import dev.criugpu.api.sys.ProcLines;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The GPUs a process has mapped, read from {@code /proc/<pid>/maps} (CUDA maps {@code /dev/nvidia<minor>} for each
 * GPU it works on), without touching CUDA. Must be read before the checkpoint releases those mappings. A name proves
 * nothing (any file can be called /dev/nvidia0): a mapping or descriptor counts as GPU N when the file behind it
 * ({@code /proc/PID/map_files/RANGE}, {@code /proc/PID/fd/N}) is the character device 195:N; only where that cannot be
 * read (not root) does the name decide.
 */
public final class TaskGpus {
    private static final Pattern DEVICE = Pattern.compile("\\s/dev/nvidia([0-9]{1,3})(?:\\s|$)");
    /** NVIDIA's fixed major; minors 0-253 are GPUs (254 nvidia-modeset, 255 nvidiactl). */
    static final int MAJOR = 195;
    static final int LAST_GPU_MINOR = 253;

    private TaskGpus() {
    }

    /** Device minors named in a maps text, ascending, each once (the name alone: see {@link #gpuMinor}). */
    public static List<Integer> minorsInMaps(String maps) {
        TreeSet<Integer> minors = new TreeSet<>();
        for (String line : maps.split("\n")) minorByName(line).ifPresent(minors::add);
        return List.copyOf(minors);
    }

    private static OptionalInt minorByName(String text) {
        Matcher m = DEVICE.matcher(text);
        if (!m.find()) return OptionalInt.empty();
        int minor = Integer.parseInt(m.group(1));
        return minor <= LAST_GPU_MINOR ? OptionalInt.of(minor) : OptionalInt.empty();
    }

    /**
     * The GPU minor of the file behind {@code link} (a map_files or fd entry) whose path reads {@code name}: by its
     * device numbers, or by {@code name} when the link cannot be followed (permission); empty for anything else.
     */
    static OptionalInt gpuMinor(Path link, String name) {
        if (minorByName(" " + name).isEmpty()) return OptionalInt.empty();
        Map<String, Object> a;
        try {
            a = Files.readAttributes(link, "unix:mode,rdev");
        } catch (java.nio.file.NoSuchFileException e) {
            return OptionalInt.empty(); // unmapped or closed meanwhile
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return minorByName(" " + name); // not allowed to follow it (EACCES, EPERM without CAP_CHECKPOINT_RESTORE)
        }
        int mode = (Integer) a.get("mode");
        long rdev = (Long) a.get("rdev");
        long major = (rdev >> 8) & 0xfff;
        long minor = (rdev & 0xff) | ((rdev >> 12) & 0xfff00);
        boolean charDevice = (mode & 0170000) == 0020000;
        return charDevice && major == MAJOR && minor <= LAST_GPU_MINOR ? OptionalInt.of((int) minor) : OptionalInt.empty();
    }

    /** The GPUs of {@code pid}: its mappings of GPU device files, looked up in {@code present} (unknown minors are skipped). */
    public static List<GpuInfo> of(int pid, List<GpuInfo> present) throws IOException {
        return of(Path.of("/proc"), pid, present);
    }

    /** {@link #of(int, List)} from {@code proc} (normally /proc). */
    static List<GpuInfo> of(Path proc, int pid, List<GpuInfo> present) throws IOException {
        Path dir = proc.resolve(Integer.toString(pid));
        TreeSet<Integer> minors = new TreeSet<>();
        // a line at a time, keeping only minors: the task's owner decides how long maps is, criu's JVM has 64 MiB
        ProcLines.forEach(dir.resolve("maps"), ProcLines.MAPS_LINE_LIMIT, line -> {
            int sp = line.indexOf(' ');
            if (sp > 0 && line.contains("/dev/nvidia")) {
                gpuMinor(dir.resolve("map_files/" + line.substring(0, sp)), line).ifPresent(minors::add);
            }
        });
        Map<Integer, GpuInfo> byMinor = new java.util.HashMap<>();
        for (GpuInfo g : present) byMinor.put(g.minor(), g);
        return minors.stream().filter(byMinor::containsKey).map(byMinor::get).toList();
    }

    /**
     * Every GPU {@code pid} can see: all of {@code present} unless its environment sets CUDA_VISIBLE_DEVICES, else
     * the GPUs it has mapped or open ({@code /dev/nvidia<minor>} file descriptors) next to {@code used}.
     */
    public static List<GpuInfo> visible(int pid, List<GpuInfo> present, List<GpuInfo> used) {
        if (!setsVisibleDevices(pid)) return present;
        java.util.Set<Integer> minors = new TreeSet<>();
        for (GpuInfo g : used) minors.add(g.minor());
        try (Stream<Path> fds = Files.list(Path.of("/proc/" + pid + "/fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    gpuMinor(fd, Files.readSymbolicLink(fd).toString()).ifPresent(minors::add);
                } catch (IOException e) {
                    // the fd closed meanwhile
                }
            }
        } catch (IOException e) {
            return used;
        }
        return present.stream().filter(g -> minors.contains(g.minor())).toList();
    }

    private static boolean setsVisibleDevices(int pid) {
        try {
            return ProcEntries.read(Path.of("/proc/" + pid + "/environ"), ProcEntries.ENVIRON_LIMIT).entries().stream()
                    .anyMatch(kv -> kv.startsWith("CUDA_VISIBLE_DEVICES="));
        } catch (IOException e) {
            return false;
        }
    }
}

package dev.criugpu.cuda.gpu;

import dev.criugpu.api.sys.ProcEntries;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The GPUs a process has mapped, read from {@code /proc/<pid>/maps} (CUDA maps {@code /dev/nvidia<minor>} for each
 * GPU it works on), without touching CUDA. Must be read before the checkpoint releases those mappings.
 */
public final class TaskGpus {
    private static final Pattern DEVICE = Pattern.compile("\\s/dev/nvidia([0-9]+)(?:\\s|$)");

    private TaskGpus() {
    }

    /** Device minors named in a maps text, ascending, each once. */
    public static List<Integer> minorsInMaps(String maps) {
        TreeSet<Integer> minors = new TreeSet<>();
        for (String line : maps.split("\n")) {
            Matcher m = DEVICE.matcher(line);
            if (m.find()) minors.add(Integer.parseInt(m.group(1)));
        }
        return List.copyOf(minors);
    }

    /** The GPUs of {@code pid}: the minors in its maps, looked up in {@code present} (unknown minors are skipped). */
    public static List<GpuInfo> of(int pid, List<GpuInfo> present) throws IOException {
        String maps;
        try (Stream<String> lines = Files.lines(Path.of("/proc/" + pid + "/maps"))) {
            maps = String.join("\n", lines.filter(l -> l.contains("/dev/nvidia")).toList());
        }
        Map<Integer, GpuInfo> byMinor = new java.util.HashMap<>();
        for (GpuInfo g : present) byMinor.put(g.minor(), g);
        return minorsInMaps(maps).stream().filter(byMinor::containsKey).map(byMinor::get).toList();
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
                    Matcher m = DEVICE.matcher(" " + Files.readSymbolicLink(fd));
                    if (m.find()) minors.add(Integer.parseInt(m.group(1)));
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

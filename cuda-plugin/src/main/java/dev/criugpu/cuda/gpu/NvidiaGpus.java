package dev.criugpu.cuda.gpu;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The GPUs the NVIDIA kernel driver reports under {@code /proc/driver/nvidia} (no CUDA initialisation needed), and
 * the driver release from {@code /proc/driver/nvidia/version}.
 */
public final class NvidiaGpus {
    public static final Path PROC_ROOT = Path.of("/proc/driver/nvidia");
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(NvidiaGpus.class);

    private NvidiaGpus() {
    }

    /** The host's GPUs but {@code treatAbsent} (tests move tasks off them); none, with a warning, when unreadable. */
    public static List<GpuInfo> present(java.util.Set<GpuUuid> treatAbsent) {
        try {
            List<GpuInfo> all = list(PROC_ROOT);
            if (!treatAbsent.isEmpty()) log.info("treating {} as absent (CRIU_CUDA_TREAT_ABSENT)", treatAbsent);
            return all.stream().filter(g -> !treatAbsent.contains(g.uuid())).toList();
        } catch (IOException | IllegalArgumentException e) {
            log.warn("cannot list GPUs from {}: {}", PROC_ROOT, e.getMessage());
            return List.of();
        }
    }

    /** Every GPU under {@code root}/gpus, ordered by device minor; empty when the directory is absent. */
    public static List<GpuInfo> list(Path root) throws IOException {
        Path gpus = root.resolve("gpus");
        if (!Files.isDirectory(gpus)) return List.of();
        List<GpuInfo> found = new ArrayList<>();
        try (Stream<Path> dirs = Files.list(gpus)) {
            for (Path dir : dirs.sorted().toList()) {
                Path info = dir.resolve("information");
                if (Files.isRegularFile(info)) found.add(parseInformation(Files.readString(info), dir.getFileName().toString(), info));
            }
        }
        found.sort(Comparator.comparingInt(GpuInfo::minor));
        return List.copyOf(found);
    }

    /** Parses one {@code information} file ("Model:", "GPU UUID:", "Device Minor:" lines). */
    static GpuInfo parseInformation(String text, String busId, Path source) {
        String model = null;
        String uuid = null;
        Integer minor = null;
        for (String line : text.split("\n")) {
            int colon = line.indexOf(':');
            if (colon < 0) continue;
            String key = line.substring(0, colon).trim();
            String value = line.substring(colon + 1).trim();
            switch (key) {
                case "Model" -> model = value;
                case "GPU UUID" -> uuid = value;
                case "Device Minor" -> {
                    try {
                        minor = Integer.parseInt(value);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException(source + ": Device Minor '" + value + "' is not a number");
                    }
                }
                default -> { }
            }
        }
        if (model == null || uuid == null || minor == null) {
            throw new IllegalArgumentException(source + ": lacks a Model, GPU UUID or Device Minor line");
        }
        try {
            return new GpuInfo(GpuUuid.parse(uuid), minor, model, busId);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + ": " + e.getMessage());
        }
    }

    /** The kernel module release, e.g. "580.159.04", from {@code root}/version. */
    public static Optional<String> driverRelease(Path root) {
        try {
            String text = Files.readString(root.resolve("version"));
            var m = java.util.regex.Pattern.compile("Kernel Module(?: for \\S+)?\\s+([0-9]+(?:\\.[0-9]+)+)").matcher(text);
            return m.find() ? Optional.of(m.group(1)) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        }
    }
}

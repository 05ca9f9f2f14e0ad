package dev.criugpu.cuda.config;

import dev.criugpu.cuda.gpu.DeviceMap;
import dev.criugpu.cuda.gpu.GpuUuid;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The plugin's settings: environment variables first, then keys of the plugin dir's {@code java/criu-gpu.cfg}
 * ({@code key=value} lines, {@code #} comments).
 *
 * <pre>
 * env                     cfg key            meaning
 * CRIU_CUDA_BACKEND       cuda.backend       driver | cli (default: driver if usable, else cli)
 * CRIU_CUDA_PARALLEL      cuda.parallel      0 = run the per-task driver work one task after another
 * CRIU_CUDA_DEVICE_MAP    cuda.device-map    oldUuid=newUuid,... for restore
 * CRIU_CUDA_TREAT_ABSENT  cuda.treat-absent  uuid,... present GPUs to treat as absent (tests)
 * CRIU_CUDA_GUARD         cuda.guard         0 = no CUDA agent: the dump's driver calls run in criu, nothing returns its tasks if criu dies
 * CRIU_CUDA_QUIESCE       cuda.quiesce       0 = lock each task at its own PAUSE_DEVICES instead of the whole job at once
 * CRIU_CUDA_NCCL_CHECK    cuda.nccl-check    0 = dump NCCL ranks whose environment leaves P2P/SHM on (the program turns
 *                                            them off itself)
 * CRIU_CUDA_MULTI_GPU_CHECK cuda.multi-gpu-check  0 = dump a process on several GPUs holding more than about 1 GiB on
 *                                            one (it never enables peer access between them)
 * CRIU_CUDA_NCCL_RELEASE_S cuda.nccl-release-s  how long a dump waits for NCCL ranks that use the criu_gpu package to
 *                                            release their communicators (seconds, default 60)
 * CRIU_CUDA_HOST_COPY     cuda.host-copy     plugin = the driver's host copy of device memory is kept out of criu's pages
 *                                            and put back by the plugin at restore, many threads into huge pages;
 *                                            criu (default, until measured on GPUs) = left in criu's pages (images
 *                                            upstream's plugin restores)
 * </pre>
 */
public final class PluginConfig {
    public enum BackendChoice { AUTO, DRIVER, CLI }

    private final Map<String, String> values;
    private final Map<String, String> sources;

    private PluginConfig(Map<String, String> values, Map<String, String> sources) {
        this.values = values;
        this.sources = sources;
    }

    private static final Map<String, String> KEYS = Map.of(
            "CRIU_CUDA_BACKEND", "cuda.backend",
            "CRIU_CUDA_PARALLEL", "cuda.parallel",
            "CRIU_CUDA_DEVICE_MAP", "cuda.device-map",
            "CRIU_CUDA_TREAT_ABSENT", "cuda.treat-absent",
            "CRIU_CUDA_GUARD", "cuda.guard",
            "CRIU_CUDA_QUIESCE", "cuda.quiesce",
            "CRIU_CUDA_NCCL_CHECK", "cuda.nccl-check",
            "CRIU_CUDA_MULTI_GPU_CHECK", "cuda.multi-gpu-check",
            "CRIU_CUDA_NCCL_RELEASE_S", "cuda.nccl-release-s",
            "CRIU_CUDA_HOST_COPY", "cuda.host-copy");

    /**
     * @param env the environment (System.getenv() in production)
     * @param cfgFile the cfg file; absent is fine
     * @throws IllegalArgumentException for an unreadable cfg file or a malformed line, naming the file and line
     */
    public static PluginConfig load(Map<String, String> env, Path cfgFile) {
        Map<String, String> values = new LinkedHashMap<>();
        Map<String, String> sources = new LinkedHashMap<>();
        if (cfgFile != null && Files.isRegularFile(cfgFile)) {
            java.util.List<String> lines;
            try {
                lines = Files.readAllLines(cfgFile);
            } catch (IOException e) {
                throw new IllegalArgumentException(cfgFile + ": cannot read: " + e.getMessage());
            }
            for (int n = 0; n < lines.size(); n++) {
                String line = lines.get(n).trim();
                if (line.isEmpty() || line.startsWith("#")) continue;
                int eq = line.indexOf('=');
                if (eq <= 0) throw new IllegalArgumentException(cfgFile + ":" + (n + 1) + ": '" + line + "' is not key=value");
                String key = line.substring(0, eq).trim();
                if (!key.startsWith("cuda.")) continue;
                if (!KEYS.containsValue(key)) throw new IllegalArgumentException(cfgFile + ":" + (n + 1) + ": unknown key " + key);
                values.put(key, line.substring(eq + 1).trim());
                sources.put(key, cfgFile + ":" + (n + 1));
            }
        }
        for (var e : KEYS.entrySet()) {
            String v = env.get(e.getKey());
            if (v != null) {
                values.put(e.getValue(), v.trim());
                sources.put(e.getValue(), e.getKey());
            }
        }
        return new PluginConfig(values, sources);
    }

    private Optional<String> get(String key) {
        return Optional.ofNullable(values.get(key)).filter(v -> !v.isEmpty());
    }

    private String source(String key) {
        return sources.getOrDefault(key, key);
    }

    public BackendChoice backend() {
        return get("cuda.backend").map(v -> switch (v.toLowerCase(Locale.ROOT)) {
            case "driver" -> BackendChoice.DRIVER;
            case "cli" -> BackendChoice.CLI;
            case "auto" -> BackendChoice.AUTO;
            default -> throw new IllegalArgumentException(source("cuda.backend") + "='" + v + "': expected driver or cli");
        }).orElse(BackendChoice.AUTO);
    }

    public boolean parallel() {
        return flag("cuda.parallel", true);
    }

    /** Whether a dump locks every CUDA task of the job together at its first PAUSE_DEVICES. */
    public boolean quiesce() {
        return flag("cuda.quiesce", true);
    }

    /** Refuse, before any lock, a process on several GPUs holding more than a restore with peer access can take. */
    public boolean multiGpuCheck() {
        return flag("cuda.multi-gpu-check", true);
    }

    /** Refuse, before any lock, a dump of NCCL ranks on transports the driver cannot return. */
    public boolean ncclCheck() {
        return flag("cuda.nccl-check", true);
    }

    /** How long (ms) a dump waits for NCCL ranks to release their communicators (criu_gpu package). */
    public long ncclReleaseMs() {
        return get("cuda.nccl-release-s").map(v -> {
            try {
                long s = Long.parseLong(v);
                if (s < 1 || s > 86_400) throw new NumberFormatException();
                return s * 1000;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(source("cuda.nccl-release-s") + "='" + v + "': expected seconds, 1 to 86400");
            }
        }).orElse(60_000L);
    }

    /** Whether a dump keeps the driver's host copy in the plugin's format (see HostCopyImages), not in criu's pages. */
    public boolean hostCopyPlugin() {
        return get("cuda.host-copy").map(v -> switch (v.toLowerCase(Locale.ROOT)) {
            case "plugin" -> true;
            case "criu" -> false;
            default -> throw new IllegalArgumentException(source("cuda.host-copy") + "='" + v + "': expected plugin or criu");
        }).orElse(false);
    }

    public boolean guard() {
        return flag("cuda.guard", true);
    }

    private boolean flag(String key, boolean dflt) {
        return get(key).map(v -> switch (v) {
            case "0", "false", "no" -> false;
            case "1", "true", "yes" -> true;
            default -> throw new IllegalArgumentException(source(key) + "='" + v + "': expected 0 or 1");
        }).orElse(dflt);
    }

    public Map<GpuUuid, GpuUuid> deviceMap() {
        return DeviceMap.parse(values.get("cuda.device-map"), source("cuda.device-map"));
    }

    public Set<GpuUuid> treatAbsent() {
        return DeviceMap.parseList(values.get("cuda.treat-absent"), source("cuda.treat-absent"));
    }
}

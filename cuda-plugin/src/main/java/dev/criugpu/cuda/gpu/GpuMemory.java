package dev.criugpu.cuda.gpu;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Device memory figures from {@code nvidia-smi} (the driver's own tool; no CUDA context is made): the memory each
 * process holds on each GPU, and each GPU's free memory. Either query answers empty when nvidia-smi is missing or
 * fails; callers then skip the check they wanted it for.
 */
public final class GpuMemory {
    private static final Logger log = LoggerFactory.getLogger(GpuMemory.class);
    public static final long TIMEOUT_S = 15;

    private GpuMemory() {
    }

    /** pid → (GPU → MiB) of every compute process. */
    public static Optional<Map<Integer, Map<GpuUuid, Long>>> usedByPid() {
        return run("--query-compute-apps=pid,gpu_uuid,used_memory").map(GpuMemory::parseUsed);
    }

    /** GPU → free MiB. */
    public static Optional<Map<GpuUuid, Long>> freeMib() {
        return run("--query-gpu=uuid,memory.free").map(GpuMemory::parseFree);
    }

    /** Lines "pid, GPU-uuid, MiB" (csv,noheader,nounits); lines that do not parse are skipped. */
    static Map<Integer, Map<GpuUuid, Long>> parseUsed(String text) {
        Map<Integer, Map<GpuUuid, Long>> used = new HashMap<>();
        for (String line : text.split("\n")) {
            String[] f = line.split(",");
            if (f.length != 3) continue;
            try {
                int pid = Integer.parseInt(f[0].trim());
                GpuUuid gpu = GpuUuid.parse(f[1]);
                long mib = Long.parseLong(f[2].trim());
                used.computeIfAbsent(pid, p -> new LinkedHashMap<>()).merge(gpu, mib, Long::sum);
            } catch (IllegalArgumentException e) {
                // "[N/A]" or a line of another form: nothing to learn from it
            }
        }
        return used;
    }

    /** Lines "GPU-uuid, MiB" (csv,noheader,nounits). */
    static Map<GpuUuid, Long> parseFree(String text) {
        Map<GpuUuid, Long> free = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            String[] f = line.split(",");
            if (f.length != 2) continue;
            try {
                free.put(GpuUuid.parse(f[0]), Long.parseLong(f[1].trim()));
            } catch (IllegalArgumentException e) {
                // as above
            }
        }
        return free;
    }

    private static Optional<String> run(String query) {
        List<String> cmd = List.of("nvidia-smi", query, "--format=csv,noheader,nounits");
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.PIPE).start();
            p.getOutputStream().close();
            // the answer is a few lines, well inside a pipe's buffer: waiting first cannot block nvidia-smi
            if (!p.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                log.warn("nvidia-smi {} did not answer within {} s; GPU memory is not checked", query, TIMEOUT_S);
                return Optional.empty();
            }
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                log.warn("nvidia-smi {} failed ({}): {}; GPU memory is not checked", query, p.exitValue(), text.strip());
                return Optional.empty();
            }
            return Optional.of(text);
        } catch (IOException e) {
            log.info("nvidia-smi is not usable ({}); GPU memory is not checked", e.getMessage());
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }
}

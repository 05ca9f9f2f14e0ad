package dev.criugpu.cuda.gpu;

import dev.criugpu.api.ChildEnvironment;
import dev.criugpu.cuda.sys.MemorySource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Device memory from the {@code nvidia-smi} tool: the fallback for a JVM whose loader does not find libnvidia-ml
 * (nvidia-smi is itself built on it, so this helps only where the tool finds the library and we do not). It starts a
 * process, which a restore would rather not (DESIGN rule 3); figures come in whole MiB.
 */
final class NvidiaSmiMemory implements MemorySource {
    private static final Logger log = LoggerFactory.getLogger(NvidiaSmiMemory.class);
    static final NvidiaSmiMemory INSTANCE = new NvidiaSmiMemory();
    private static final long MIB = 1L << 20;

    private NvidiaSmiMemory() {
    }

    @Override
    public Optional<List<ProcessMemory>> computeProcesses() {
        return run("--query-compute-apps=pid,gpu_uuid,used_memory").map(NvidiaSmiMemory::parseProcesses);
    }

    @Override
    public Optional<List<FreeMemory>> free() {
        return run("--query-gpu=uuid,memory.free").map(NvidiaSmiMemory::parseFree);
    }

    /** Lines "pid, GPU-uuid, MiB" (csv,noheader,nounits); "[N/A]" is a negative figure, other odd lines are skipped. */
    static List<ProcessMemory> parseProcesses(String text) {
        List<ProcessMemory> rows = new ArrayList<>();
        for (String line : text.split("\n")) {
            String[] f = line.split(",");
            if (f.length != 3) continue;
            try {
                String mib = f[2].trim();
                long bytes = mib.equals("[N/A]") ? -1 : Math.multiplyExact(Long.parseLong(mib), MIB);
                rows.add(new ProcessMemory(f[1].trim(), Integer.parseInt(f[0].trim()), bytes));
            } catch (IllegalArgumentException | ArithmeticException e) {
                // a line of another form: nothing to learn from it
            }
        }
        return rows;
    }

    /** Lines "GPU-uuid, MiB" (csv,noheader,nounits). */
    static List<FreeMemory> parseFree(String text) {
        List<FreeMemory> rows = new ArrayList<>();
        for (String line : text.split("\n")) {
            String[] f = line.split(",");
            if (f.length != 2) continue;
            try {
                rows.add(new FreeMemory(f[0].trim(), Math.multiplyExact(Long.parseLong(f[1].trim()), MIB)));
            } catch (IllegalArgumentException | ArithmeticException e) {
                // as above ("No devices were found", "[N/A]")
            }
        }
        return rows;
    }

    private static Optional<String> run(String query) {
        List<String> cmd = List.of("nvidia-smi", query, "--format=csv,noheader,nounits");
        long t0 = System.nanoTime();
        try {
            Process p = ChildEnvironment.applyTo(new ProcessBuilder(cmd)).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.PIPE).start();
            p.getOutputStream().close();
            // the answer is a few lines, well inside a pipe's buffer: waiting first cannot block nvidia-smi
            if (!p.waitFor(GpuMemory.TIMEOUT_S, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                log.warn("nvidia-smi {} did not answer within {} s; GPU memory is not checked", query, GpuMemory.TIMEOUT_S);
                return Optional.empty();
            }
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                log.warn("nvidia-smi {} failed ({}): {}; GPU memory is not checked", query, p.exitValue(), text.strip());
                return Optional.empty();
            }
            log.debug("GPU memory from nvidia-smi {} in {} ms", query, (System.nanoTime() - t0) / 1_000_000);
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

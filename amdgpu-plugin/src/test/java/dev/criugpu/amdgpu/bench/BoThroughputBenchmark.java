package dev.criugpu.amdgpu.bench;

import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.dump.KfdFileDumper;
import dev.criugpu.amdgpu.dump.MaxBufferSize;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.kfd.BoBucket;
import dev.criugpu.amdgpu.kfd.KfdCheckpoint;
import dev.criugpu.amdgpu.sys.KfdFile;
import dev.criugpu.amdgpu.restore.BoRefiller;
import dev.criugpu.amdgpu.restore.RefillRequest;
import dev.criugpu.amdgpu.restore.RestorePlan;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.TwoGpuHost;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.sys.Syscalls;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * BO dump and refill throughput of the plugin's real data path against plain memcpy + file I/O of the same bytes,
 * side by side in one run, on the simulated KFD and libdrm_amdgpu (libkfdsim.so, bound through the same system
 * properties surefire sets). Plugin dump: {@link KfdFileDumper#dump} (PROCESS_INFO, CHECKPOINT, one SDMA thread per
 * GPU into the pages files, the KFD image, UNPAUSE). Plugin refill: {@link BoRefiller#refill} from those pages
 * files into memfds through SDMA writes. Baseline: {@link PlainCopy}. Every result is checked byte for byte once
 * (untimed) before the timed rounds; the timed rounds alternate which side goes first. Before each round's dumps
 * both sides' pages files are removed (untimed), as a real dump writes into an empty images directory: replacing
 * the previous round's file would otherwise add the freeing of its pages to the plugin's rename. The refill
 * targets stay populated between rounds, so neither side pays for page allocation there. Not a JUnit test.
 *
 * <pre>BoThroughputBenchmark [--dir DIR] [--bos-per-gpu N] [--bo-mib M] [--rounds R] [--caps 0,16M]</pre>
 */
public final class BoThroughputBenchmark {
    private static final int FILE_ID = 7;
    private static final int OWNER_PID = 4343;
    private static final int[] GPUS = {0x1001, 0x1002}; // TwoGpuHost: renderD128, renderD129
    private static final long PAGE = 4096;
    private static final double MIB = 1 << 20;

    private final Syscalls sys = KfdSimulator.syscalls();
    private final Path dir;
    private final int rounds;
    private final Topology topology;
    private final AmdgpuImages images;
    private final Path baselineDir;
    private final int kfd;
    private final List<BenchBo> bos = new ArrayList<>();
    private final List<PlainCopy.GpuBos> gpus = new ArrayList<>();
    private final long totalBytes;

    private BoThroughputBenchmark(Path dir, int bosPerGpu, long boBytes, int rounds) throws IOException {
        this.dir = dir;
        this.rounds = rounds;
        TwoGpuHost host = TwoGpuHost.create(dir);
        topology = host.topology();
        images = host.images();
        baselineDir = Files.createDirectories(dir.resolve("baseline"));
        kfd = KfdSimulator.createProcess(OWNER_PID, KfdSimulator.gettid());
        for (int gpu : GPUS) KfdSimulator.addGpu(kfd, gpu, gpu);
        int vram = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM() | kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE();
        int gtt = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_GTT();
        int count = bosPerGpu * GPUS.length;
        for (int i = 0; i < count; i++) {
            // Interleaved across the GPUs, VRAM and GTT alternating per GPU; byte j of BO i is (31 i + j) & 0xff.
            KfdSimulator.addBo(kfd, 0x7f00_0000_0000L + (long) i * (boBytes + (1L << 30)), boBytes, GPUS[i % 2],
                    (i / 2) % 2 == 0 ? vram : gtt, 31 * i);
        }
        // The baseline reads the same memfds the plugin's CHECKPOINT hands out (dma-buf fd = dup of the BO memfd).
        KfdFile file = new KfdFile(sys, kfd);
        KfdCheckpoint cp = file.checkpoint(file.processInfo());
        file.unpause();
        for (int i = 0; i < count; i++) {
            BoBucket b = cp.bos().get(i);
            bos.add(new BenchBo(i, b.gpuId(), b.size(), b.dmabufFd(), PlainLibc.memfd("bench-target-" + i, b.size())));
        }
        for (int gpu : GPUS) {
            gpus.add(new PlainCopy.GpuBos(ImageNames.pages(FILE_ID, gpu), bos.stream().filter(b -> b.userGpuId() == gpu).toList()));
        }
        totalBytes = bos.stream().mapToLong(BenchBo::size).sum();
    }

    /** Median seconds of each side of one operation. */
    private record Result(String name, double[] plugin, double[] baseline) {
        double pluginMiBs(long bytes) {
            return bytes / MIB / median(plugin);
        }

        double baselineMiBs(long bytes) {
            return bytes / MIB / median(baseline);
        }
    }

    private List<Result> runCap(long cap) throws IOException {
        long largest = bos.stream().mapToLong(BenchBo::size).max().orElseThrow();
        long bufferBytes = Math.max(PAGE, MaxBufferSize.bufferFor(cap, largest) & -PAGE);
        KfdFileDumper dumper = new KfdFileDumper(sys, images, topology, dir.resolve("no-hsakmt-shm"), cap);

        // Warm-up round, checked byte for byte.
        int submitsBefore = KfdSimulator.drmSubmits(128);
        dumper.dump(kfd, FILE_ID);
        int submits = KfdSimulator.drmSubmits(128) - submitsBefore;
        for (PlainCopy.GpuBos g : gpus) checkPages(images.dir().resolve(g.fileName()), g);
        PlainCopy.dump(gpus, baselineDir, bufferBytes);
        for (PlainCopy.GpuBos g : gpus) checkPages(baselineDir.resolve(g.fileName()), g);

        List<String> planErrors = new ArrayList<>();
        try (RestorePlan plan = RestorePlan.build(images, topology, Map.of(), planErrors::add, file -> 0);
             BoRefiller refiller = new BoRefiller(sys, images.dir(), cap, plan.localGpus())) {
            if (!planErrors.isEmpty()) throw new IllegalStateException("restore plan: " + planErrors);
            CriuKfd image = plan.kfds().get(FILE_ID);
            zeroTargets();
            pluginRefill(refiller, image, plan);
            checkTargets("plugin refill");
            zeroTargets();
            PlainCopy.refill(gpus, images.dir(), bufferBytes);
            checkTargets("baseline refill");

            double[][] t = new double[4][rounds];
            for (int r = 0; r < rounds; r++) {
                boolean pluginFirst = r % 2 == 0;
                removePagesFiles(); // a dump writes into an empty images directory, not over an older dump
                for (int k = 0; k < 2; k++) {
                    if ((k == 0) == pluginFirst) t[0][r] = time(() -> dumper.dump(kfd, FILE_ID));
                    else t[1][r] = time(() -> PlainCopy.dump(gpus, baselineDir, bufferBytes));
                }
                for (int k = 0; k < 2; k++) {
                    if ((k == 0) == pluginFirst) t[2][r] = pluginRefill(refiller, image, plan);
                    else t[3][r] = time(() -> PlainCopy.refill(gpus, images.dir(), bufferBytes));
                }
            }
            String label = cap == 0 ? "whole BO" : (cap >> 20) + " MiB";
            System.out.printf("buffer %s (%d MiB per GPU): %d SDMA submits per GPU per dump; seconds per round"
                    + " (plugin/baseline):%n", label, bufferBytes >> 20, submits);
            System.out.printf("  dump   %s%n", rounds(t[0], t[1]));
            System.out.printf("  refill %s%n", rounds(t[2], t[3]));
            return List.of(new Result("dump, buffer " + label, t[0], t[1]),
                    new Result("refill, buffer " + label, t[2], t[3]));
        }
    }

    /** Seconds for one refill request carrying dups of the target memfds (the refiller closes them). */
    private double pluginRefill(BoRefiller refiller, CriuKfd image, RestorePlan plan) {
        int[] indices = bos.stream().mapToInt(BenchBo::index).toArray();
        int[] fds = bos.stream().mapToInt(b -> PlainLibc.dup(b.targetFd())).toArray();
        RefillRequest request = new RefillRequest(FILE_ID, OWNER_PID, indices, fds);
        return time(() -> refiller.refill(request, image, plan).join());
    }

    private static double time(Runnable r) {
        long t0 = System.nanoTime();
        r.run();
        return (System.nanoTime() - t0) / 1e9;
    }

    private static String rounds(double[] plugin, double[] baseline) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < plugin.length; i++) s.append(String.format(" %.3f/%.3f", plugin[i], baseline[i]));
        return s.toString().trim();
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private void checkPages(Path file, PlainCopy.GpuBos g) throws IOException {
        try (Arena a = Arena.ofConfined(); FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            if (ch.size() != 8 + g.total()) throw new IllegalStateException(file + ": " + ch.size() + " bytes");
            MemorySegment m = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), a);
            long off = 8;
            for (BenchBo bo : g.bos()) {
                same(file + " BO " + bo.index(), bo.sourceFd(), m.asSlice(off, bo.size()));
                off += bo.size();
            }
        }
    }

    private void checkTargets(String what) {
        for (BenchBo bo : bos) {
            MemorySegment target = PlainLibc.map(bo.targetFd(), bo.size(), false);
            try {
                same(what + " BO " + bo.index(), bo.sourceFd(), target);
            } finally {
                PlainLibc.unmap(target);
            }
        }
    }

    private static void same(String what, int sourceFd, MemorySegment copy) {
        MemorySegment source = PlainLibc.map(sourceFd, copy.byteSize(), false);
        try {
            long at = source.mismatch(copy);
            if (at != -1) throw new IllegalStateException(what + ": differs from the BO at byte " + at);
        } finally {
            PlainLibc.unmap(source);
        }
    }

    private void removePagesFiles() throws IOException {
        for (PlainCopy.GpuBos g : gpus) {
            Files.delete(images.dir().resolve(g.fileName()));
            Files.delete(baselineDir.resolve(g.fileName()));
        }
    }

    private void zeroTargets() {
        for (BenchBo bo : bos) PlainLibc.zero(bo.targetFd(), bo.size());
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) return;
        try (Stream<Path> s = Files.walk(p)) {
            for (Path q : s.sorted(Comparator.reverseOrder()).toList()) Files.delete(q);
        }
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of("/dev/shm/amdgpu-bo-bench");
        int bosPerGpu = 4;
        long boMiB = 128;
        int rounds = 7;
        String caps = "0,16M";
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) throw new IllegalArgumentException(args[i] + " needs a value");
            String v = args[i + 1];
            switch (args[i]) {
                case "--dir" -> dir = Path.of(v);
                case "--bos-per-gpu" -> bosPerGpu = Integer.parseInt(v);
                case "--bo-mib" -> boMiB = Long.parseLong(v);
                case "--rounds" -> rounds = Integer.parseInt(v);
                case "--caps" -> caps = v;
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (--dir, --bos-per-gpu, --bo-mib, --rounds, --caps)");
            }
        }
        deleteTree(dir);
        Files.createDirectories(dir);
        try {
            BoThroughputBenchmark b = new BoThroughputBenchmark(dir, bosPerGpu, boMiB << 20, rounds);
            System.out.printf("%d GPUs x %d BOs x %d MiB = %d MiB per operation, files in %s (%s), %d cores,"
                    + " %d timed rounds after 1 checked warm-up, sides alternating%n", GPUS.length, bosPerGpu, boMiB,
                    b.totalBytes >> 20, dir, Files.getFileStore(dir).type(), Runtime.getRuntime().availableProcessors(),
                    rounds);
            List<Result> results = new ArrayList<>();
            for (String cap : caps.split(",")) results.addAll(b.runCap(MaxBufferSize.parse(cap.trim())));
            System.out.println();
            System.out.printf("| %-24s | %13s | %15s | %6s |%n", "operation", "plugin MiB/s", "baseline MiB/s", "ratio");
            System.out.println("|--------------------------|---------------|-----------------|--------|");
            for (Result r : results) {
                double p = r.pluginMiBs(b.totalBytes);
                double q = r.baselineMiBs(b.totalBytes);
                System.out.printf("| %-24s | %13.0f | %15.0f | %6.2f |%n", r.name(), p, q, p / q);
            }
        } finally {
            KfdSimulator.reset();
            deleteTree(dir);
        }
    }
}

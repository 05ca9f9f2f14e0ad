package dev.criugpu.amdgpu.testing;

import dev.criugpu.amdgpu.AmdgpuPlugin;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.sys.Syscalls;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.criugpu.amdgpu.testing.SysfsTree.PCIE;

/**
 * A simulated GPU process for end-to-end tests: pid 4242 on two GPUs of different models (device A 0x738c as GPU
 * 0x1001 at renderD128, device B 0x7408 as 0x1002 at renderD129), several multi-MiB VRAM/GTT BOs of random bytes,
 * a doorbell and a userptr BO, queue and event objects; dumped through the plugin's hooks, render fd first.
 */
public final class SimulatedGpuProcess {
    public static final int VRAM = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM();
    public static final int GTT = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_GTT();
    public static final int DOORBELL = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL();
    public static final int USERPTR = kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR();
    public static final int KFD_FILE = 5;
    public static final int RENDER_FILE = 6;
    /** The process's queues and events: how many, and KFD's opaque blob describing them. */
    public static final int OBJECTS = 5;
    public static final byte[] PRIV_DATA = {1, 2, 3, 4, 5, 6, 7, 8};
    static final int DEVICE_A = 0x738c;
    public static final int DEVICE_B = 0x7408;

    /** A BO of the process, with its bytes. */
    public record Bo(long addr, int size, int gpu, int flags, byte[] bytes) {
        public boolean hasContents() {
            return (flags & (VRAM | GTT)) != 0;
        }
    }

    private SimulatedGpuProcess() {
    }

    /** GPU ids a (device A) and b (device B) on nodes 1 and 2 (render 128, 129), or on nodes 2 and 1. */
    public static Path topology(Path root, int a, int b, boolean swapped) {
        SysfsTree t = new SysfsTree();
        t.cpu(0);
        t.gpu(1, swapped ? b : a).prop("device_id", swapped ? DEVICE_B : DEVICE_A);
        t.gpu(2, swapped ? a : b).prop("device_id", swapped ? DEVICE_A : DEVICE_B);
        t.connect(PCIE, 0, 1).connect(PCIE, 0, 2);
        return t.write(root);
    }

    public static List<Bo> bos(Random random) {
        List<Bo> bos = new ArrayList<>();
        int[][] spec = {{3 << 20, 0x1001, VRAM}, {2 << 20, 0x1002, GTT}, {(5 << 20) + 4096, 0x1002, VRAM},
                {4096, 0x1001, DOORBELL}, {8192, 0x1001, USERPTR}, {(1 << 20) + 12288, 0x1001, GTT}};
        long addr = 0x7f10_0000_0000L;
        for (int[] s : spec) {
            byte[] b = new byte[s[0]];
            random.nextBytes(b);
            bos.add(new Bo(addr, s[0], s[1], s[2], b));
            addr += 64L << 20;
        }
        return bos;
    }

    /** Creates the process in the simulator, seized by this thread; returns the KFD fd a dumper holds. */
    public static int create(List<Bo> bos) {
        return create(4242, bos);
    }

    /** As {@link #create(List)}, for pid {@code pid}. */
    public static int create(int pid, List<Bo> bos) {
        return create(pid, List.of(0x1001, 0x1002), bos);
    }

    /** As {@link #create(List)}, for pid {@code pid} on the GPUs {@code gpus} only (gpu ids never migrated). */
    public static int create(int pid, List<Integer> gpus, List<Bo> bos) {
        int fd = KfdSimulator.createProcess(pid, KfdSimulator.gettid());
        for (int gpu : gpus) KfdSimulator.addGpu(fd, gpu, gpu);
        for (int i = 0; i < bos.size(); i++) {
            Bo b = bos.get(i);
            KfdSimulator.addBo(fd, b.addr(), b.size(), b.gpu(), b.flags(), i);
            if (b.hasContents()) KfdSimulator.fillBo(fd, i, b.bytes());
        }
        KfdSimulator.setObjects(fd, OBJECTS, PRIV_DATA);
        return fd;
    }

    /** The dump plugin for {@code dir} (topology in dir/there, images in dir/images). */
    public static AmdgpuPlugin dumpPlugin(Path dir, Map<String, String> env) {
        Path there = topology(dir.resolve("there"), 0x1001, 0x1002, false);
        return new AmdgpuPlugin(s -> SimulatedHost.create(there, dir, env));
    }

    /** The images of a two-GPU process with the fuzz tests' fixed set of BOs (seed 11), in {@code dir}/dumped. */
    public static Path seededDump(Path dir) throws IOException {
        return dump(dir.resolve("dumped"), bos(new Random(11)), Map.of());
    }

    /** The restoring host's topology: the dump's two GPUs, found in swapped order. */
    public static dev.criugpu.amdgpu.topology.Topology swappedHere(Path dir) throws IOException {
        return new dev.criugpu.amdgpu.topology.SysfsTopologyReader(topology(dir.resolve("here"), 0x2001, 0x2002, true)).read("Local");
    }

    /** Creates and dumps the process (render fd, then KFD fd) into dir/images; returns the images directory. */
    public static Path dump(Path dir, List<Bo> bos, Map<String, String> env) throws IOException {
        Path images = Files.createDirectories(dir.resolve("images"));
        int kfd = create(bos);
        Syscalls sys = KfdSimulator.syscalls();
        AmdgpuPlugin plugin = dumpPlugin(dir, env);
        check(plugin.init(Stage.DUMP, new SimulatedCriu(Stage.DUMP, images, InventoryClaim.NONE)), "init");
        int render = sys.open("/dev/dri/renderD129", Syscalls.O_RDWR);
        check(plugin.dumpExtFile(render, RENDER_FILE), "render node dump");
        check(plugin.dumpExtFile(kfd, KFD_FILE), "KFD dump");
        plugin.exit(Stage.DUMP, 0);
        sys.close(render);
        return images;
    }

    /**
     * Dumps a tree in one criu dump: process i is pid 4242 + i with KFD file 5 + 2i (the render fd of the first is
     * file 6). Returns the images directory.
     */
    public static Path dumpTree(Path dir, List<List<Bo>> processes, Map<String, String> env) throws IOException {
        Path images = Files.createDirectories(dir.resolve("images"));
        Syscalls sys = KfdSimulator.syscalls();
        AmdgpuPlugin plugin = dumpPlugin(dir, env);
        check(plugin.init(Stage.DUMP, new SimulatedCriu(Stage.DUMP, images, InventoryClaim.NONE)), "init");
        int render = sys.open("/dev/dri/renderD129", Syscalls.O_RDWR);
        check(plugin.dumpExtFile(render, RENDER_FILE), "render node dump");
        for (int i = 0; i < processes.size(); i++) {
            check(plugin.dumpExtFile(create(4242 + i, processes.get(i)), KFD_FILE + 2 * i), "KFD dump of process " + i);
        }
        plugin.exit(Stage.DUMP, 0);
        sys.close(render);
        return images;
    }

    /** The VRAM/GTT mappings of {@code bos} as a restored task's criu asks for them (GPU 0x1001 is renderD129 here). */
    public static List<KfdSimulator.SizedQuery> contentQueries(List<Bo> bos, dev.criugpu.amdgpu.images.proto.CriuKfd image) {
        List<KfdSimulator.SizedQuery> q = new ArrayList<>();
        for (int i = 0; i < bos.size(); i++) {
            if (!bos.get(i).hasContents()) continue;
            var e = image.getBoEntries(i);
            q.add(new KfdSimulator.SizedQuery("/dev/dri/renderD" + (bos.get(i).gpu() == 0x1001 ? 129 : 128), e.getAddr(),
                    e.getOffset(), e.getSize()));
        }
        return q;
    }

    /** A restore plugin on the host where the GPUs have ids 0x2001 (device A, renderD129) and 0x2002 (renderD128). */
    public static AmdgpuPlugin restorePlugin(Path dir, Map<String, String> env) {
        Path here = topology(dir.resolve("here"), 0x2001, 0x2002, true);
        return new AmdgpuPlugin(s -> SimulatedHost.create(here, dir, env));
    }

    private static void check(int rc, String what) {
        if (rc != 0) throw new AssertionError(what + " returned " + rc);
    }
}

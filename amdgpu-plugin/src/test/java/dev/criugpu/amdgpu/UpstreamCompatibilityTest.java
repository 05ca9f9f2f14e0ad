package dev.criugpu.amdgpu;

import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import dev.criugpu.amdgpu.dump.DeviceNumbers;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.FramedFile;
import dev.criugpu.amdgpu.images.ImageFormat;
import dev.criugpu.amdgpu.images.proto.CriuRenderNode;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.KfdSimulator.SizedQuery;
import dev.criugpu.amdgpu.testing.KfdSimulator.VmaAnswer;
import dev.criugpu.amdgpu.testing.KfdTrace;
import dev.criugpu.amdgpu.testing.SimulatedCriu;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess.Bo;
import dev.criugpu.amdgpu.testing.SimulatedHost;
import dev.criugpu.amdgpu.testing.UpstreamHost;
import dev.criugpu.amdgpu.testing.UpstreamPlugin;
import dev.criugpu.api.DeviceFile;
import dev.criugpu.api.Errno;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.sys.Syscalls;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static dev.criugpu.amdgpu.dump.DeviceNumbers.makedev;
import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.DOORBELL;
import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.GTT;
import static dev.criugpu.amdgpu.testing.SimulatedGpuProcess.VRAM;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Differential test against criu 4.2.1's own amdgpu plugin ({@link UpstreamPlugin}, built at test time from Debian's
 * source package), run by {@code upstream-host} on the same simulated KFD and libdrm as ours: one simulated process
 * (two GPUs of different models, VRAM and GTT BOs of several sizes with random bytes, a doorbell and a userptr BO,
 * queue and event objects, hsakmt's shared memory file) is dumped by each plugin through the same hooks, in criu's
 * order; then each plugin restores each plugin's images, on a host whose GPUs have other ids in the other order, in
 * a forked task, and resumes it from criu's main process. The images must decode to the same values, the pages
 * files must be byte-identical, every restore must give back the BO contents bit for bit at moved offsets, and the
 * two plugins' KFD ioctl sequences (recorded by the simulator) may differ only where amdgpu-plugin's README says so.
 */
class UpstreamCompatibilityTest {
    /** Our dumps here write criu 4.2.1's format (ImageFormat.V4_2), to compare with 4.2.1's field by field. */
    static final Map<String, String> ENV = Map.of("KFD_MAX_BUFFER_SIZE", "1M", ImageFormat.ENV, "v4.2");
    static final int PID = 4242;
    static final int KFD = 5;
    static final int RENDER_A = 6; // renderD128: GPU 0x1001 (device A) where the process was dumped
    static final int RENDER_B = 7; // renderD129: GPU 0x1002 (device B)
    static final long DUMP_OFFSETS = 0x1_0000_0000L;
    static final long RESTORE_OFFSETS = 0x5_0000_0000L;
    static final int HSAKMT_MAGIC = 0x4b534148;
    static final int HSAKMT_SIZE = 1 << 16;
    /** criu's hook calls of the dump, in order: device mappings (KFD, both render nodes, /dev/zero), then files. */
    static final long[] VMAS = {makedev(235, 0), makedev(226, 128), makedev(226, 129), makedev(1, 5)};
    static final int[] FILE_IDS = {KFD, RENDER_A, RENDER_B};

    @TempDir
    static Path dir;

    static UpstreamPlugin upstream;
    static List<Bo> bos;
    static Path there;
    static Path here;
    static Dump theirs;
    static Dump ours;
    static final Map<String, Restore> restores = new HashMap<>();

    /** A dump: its images and trace, and whether the queues were left paused. */
    record Dump(Path images, Map<String, Integer> hooks, KfdTrace trace, boolean paused) {
    }

    /** A restore in a forked task, resumed from criu's main process, and what came back. */
    record Restore(int[] results, List<VmaAnswer> answers, int resumeRc, int resumed, Path saved, Path shm,
                   KfdTrace trace, String log) {
    }

    /**
     * A simulated process (pid {@link #PID}) on {@code gpus} with {@code bos}, and the files criu dumps for it in
     * {@code files} order ("kfd" or a render node's path, with file ids {@code ids}), after the mappings {@link #VMAS}.
     */
    record Scenario(String name, List<Integer> gpus, List<Bo> bos, List<String> files, List<Integer> ids) {
    }

    static Scenario process() {
        return new Scenario("dump", List.of(0x1001, 0x1002), bos, List.of("kfd", "/dev/dri/renderD128", "/dev/dri/renderD129"),
                List.of(KFD, RENDER_A, RENDER_B));
    }

    @BeforeAll
    static void dumpWithBothPlugins() throws IOException {
        upstream = UpstreamPlugin.get().orElse(null);
        if (upstream == null) return; // each test says it is skipped
        bos = SimulatedGpuProcess.bos(new Random(16));
        there = SimulatedGpuProcess.topology(dir.resolve("there"), 0x1001, 0x1002, false);
        here = SimulatedGpuProcess.topology(dir.resolve("here"), 0x2001, 0x2002, true);
        Path shm = Files.createDirectories(dir.resolve("dump-shm"));
        byte[] hsakmt = new byte[HSAKMT_SIZE];
        ByteBuffer.wrap(hsakmt).order(ByteOrder.nativeOrder()).putInt(HSAKMT_MAGIC);
        Files.write(shm.resolve("hsakmt_shared_mem"), hsakmt);
        theirs = dumpUpstream(process(), shm);
        ours = dumpOurs(process(), shm);
        for (Dump d : List.of(theirs, ours)) {
            for (int id : FILE_IDS) assertEquals(0, d.hooks().get("DUMP_EXT_FILE " + id), d.trace().toString());
        }
    }

    @BeforeEach
    void needsUpstream() {
        UpstreamPlugin.skipUnlessBuilt();
    }

    @AfterAll
    static void resetSimulator() {
        KfdSimulator.reset();
    }

    // ---- the dumps ----

    static Dump dumpUpstream(Scenario p, Path shm) throws IOException {
        return dumpUpstream(upstream.plugin(), "upstream-", p, shm);
    }

    /** {@code plugin} (an upstream build) dumps {@code p} in upstream-host, in {@code dir}/{@code prefix}{@code p.name()}. */
    static Dump dumpUpstream(Path plugin, String prefix, Scenario p, Path shm) throws IOException {
        Path d = Files.createDirectories(dir.resolve(prefix + p.name()));
        Path images = Files.createDirectories(d.resolve("images"));
        List<String> sc = new ArrayList<>(List.of("images " + images, "sysfs " + there, "shm " + shm,
                "trace " + d.resolve("trace"), "next-offset " + Long.toHexString(DUMP_OFFSETS), "process " + PID));
        for (int gpu : p.gpus()) sc.add(String.format("gpu %x %x", gpu, gpu));
        for (int i = 0; i < p.bos().size(); i++) {
            Bo b = p.bos().get(i);
            String content = "-";
            if (b.hasContents()) {
                Path f = d.resolve("bo-" + i + ".bin");
                Files.write(f, b.bytes());
                content = f.toString();
            }
            sc.add(String.format("bo %x %x %x %x %s", b.addr(), b.size(), b.gpu(), b.flags(), content));
        }
        sc.add("objects " + SimulatedGpuProcess.OBJECTS + " " + HexFormat.of().formatHex(SimulatedGpuProcess.PRIV_DATA));
        for (long rdev : VMAS) sc.add("vma " + DeviceNumbers.major(rdev) + " " + DeviceNumbers.minor(rdev));
        for (int i = 0; i < p.files().size(); i++) sc.add("file " + p.ids().get(i) + " " + p.files().get(i));
        UpstreamHost.Run run = UpstreamHost.run("dump", plugin, sc, d.resolve("scenario"), ENV);
        Map<String, Integer> hooks = new HashMap<>();
        for (String l : run.out()) {
            if (l.startsWith("hook ")) hooks.put(l.substring(5, l.lastIndexOf(" = ")), Integer.parseInt(l.substring(l.lastIndexOf(' ') + 1)));
        }
        return new Dump(images, hooks, KfdTrace.read(d.resolve("trace"), Map.of()), !run.require("paused").equals("0"));
    }

    static Dump dumpOurs(Scenario p, Path shm) throws IOException {
        return dumpOurs(p, shm, ENV);
    }

    static Dump dumpOurs(Scenario p, Path shm, Map<String, String> env) throws IOException {
        Path d = Files.createDirectories(dir.resolve("our-" + p.name()));
        Path images = Files.createDirectories(d.resolve("images"));
        Syscalls sys = KfdSimulator.syscalls();
        KfdSimulator.reset();
        KfdSimulator.setNextOffset(DUMP_OFFSETS);
        int kfd = SimulatedGpuProcess.create(PID, p.gpus(), p.bos());
        int[] fds = p.files().stream().mapToInt(f -> f.equals("kfd") ? kfd : sys.open(f, Syscalls.O_RDWR)).toArray();
        Path trace = d.resolve("trace");
        KfdSimulator.traceStart(trace);
        SimulatedCriu criu = new SimulatedCriu(Stage.DUMP, images, InventoryClaim.NONE);
        AmdgpuPlugin plugin = new AmdgpuPlugin(s -> SimulatedHost.create(there, d, env, shm.resolve("hsakmt_shared_mem")));
        Map<String, Integer> hooks = new HashMap<>();
        hooks.put("init DUMP", hook(criu, "init DUMP", () -> plugin.init(Stage.DUMP, criu)));
        for (long rdev : VMAS) {
            DeviceFile file = new DeviceFile(0, 0, 0020600, rdev); // a character device, as upstream-host's stat
            String what = "HANDLE_DEVICE_VMA " + DeviceNumbers.major(rdev) + ":" + DeviceNumbers.minor(rdev);
            hooks.put(what, hook(criu, what, () -> plugin.handleDeviceVma(-1, file)));
        }
        for (int i = 0; i < fds.length; i++) {
            int fd = fds[i];
            int id = p.ids().get(i);
            hooks.put("DUMP_EXT_FILE " + id, hook(criu, "DUMP_EXT_FILE " + id, () -> plugin.dumpExtFile(fd, id)));
        }
        KfdSimulator.traceMark("call exit DUMP");
        plugin.exit(Stage.DUMP, 0);
        KfdSimulator.traceMark("return exit DUMP");
        KfdSimulator.traceStop();
        boolean paused = KfdSimulator.paused(kfd);
        for (int fd : fds) if (fd != kfd) sys.close(fd);
        return new Dump(images, hooks, KfdTrace.read(trace, Map.of()), paused);
    }

    interface HookCall {
        int call();
    }

    /** A hook call between its trace marks, as upstream-host writes them; a name criu's inventory gained is traced too. */
    static int hook(SimulatedCriu criu, String what, HookCall call) {
        KfdSimulator.traceMark("call " + what);
        int before = criu.inventory().size();
        int rc = call.call();
        criu.inventory().stream().skip(before).forEach(name -> KfdSimulator.traceMark("inventory add " + name));
        KfdSimulator.traceMark("return " + what + " = " + rc);
        return rc;
    }

    // ---- the restores ----

    /** criu's UPDATE_VMA_MAP calls in the restored task: each BO mapping of the image, then a render-node mapping no BO has. */
    static List<SizedQuery> queries(CriuKfd image) {
        List<SizedQuery> q = new ArrayList<>();
        for (KfdBoEntry e : image.getBoEntriesList()) {
            if ((e.getAllocFlags() & (VRAM | GTT | DOORBELL)) == 0) continue; // userptr memory is the task's own
            String path = (e.getAllocFlags() & DOORBELL) != 0 ? "/dev/kfd" : "/dev/dri/renderD" + (e.getGpuId() == 0x1001 ? 128 : 129);
            q.add(new SizedQuery(path, e.getAddr(), e.getOffset(), e.getSize()));
        }
        q.add(new SizedQuery("/dev/dri/renderD128", 0x7f20_0000_0000L, 0x3_0000_0000L, 4096));
        return q;
    }

    /** {@code plugin} ("upstream" or "our") restores the main dump of {@code images} ("upstream" or "our"), once. */
    static synchronized Restore restore(String plugin, String images) {
        return restores.computeIfAbsent(plugin + "-restores-" + images, label ->
                restore(plugin, (images.equals("upstream") ? theirs : ours).images(), label, FILE_IDS));
    }

    /** {@code plugin} restores files {@code ids} of {@code source} (a copy of it) in a forked task, as criu does. */
    static Restore restore(String plugin, Path source, String label, int[] ids) {
        try {
            Path d = Files.createDirectories(dir.resolve(label));
            Path copy = Files.createDirectories(d.resolve("images"));
            try (Stream<Path> files = Files.list(source)) {
                for (Path f : files.toList()) Files.copy(f, copy.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
            Files.createDirectories(d.resolve("shm"));
            Files.createDirectories(d.resolve("saved"));
            List<SizedQuery> q = queries(new AmdgpuImages(copy).readKfd(KFD));
            return switch (plugin) {
                case "upstream" -> restoreUpstream(upstream.plugin(), d, copy, ids, q);
                case "criu-dev" -> restoreUpstream(UpstreamPlugin.criuDev().orElseThrow().plugin(), d, copy, ids, q);
                // criu-dev's parallel restore: the root task has no children, criu's main process copies the contents
                case "criu-dev-parallel" -> restoreUpstream(UpstreamPlugin.criuDev().orElseThrow().plugin(), d, copy, ids, q,
                        List.of("parallel 1"));
                default -> restoreOurs(d, copy, ids, q);
            };
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Restore restoreUpstream(Path plugin, Path d, Path images, int[] ids, List<SizedQuery> q) {
        return restoreUpstream(plugin, d, images, ids, q, List.of());
    }

    static Restore restoreUpstream(Path plugin, Path d, Path images, int[] ids, List<SizedQuery> q, List<String> extra) {
        List<String> sc = new ArrayList<>(extra);
        sc.addAll(List.of("images " + images, "sysfs " + here, "shm " + d.resolve("shm"),
                "trace " + d.resolve("trace"), "next-offset " + Long.toHexString(RESTORE_OFFSETS), "save " + d.resolve("saved")));
        for (int id : ids) sc.add("restore-file " + id);
        for (SizedQuery s : q) sc.add(String.format("query %s %x %x %x", s.path(), s.addr(), s.oldOffset(), s.size()));
        UpstreamHost.Run run = UpstreamHost.run("restore", plugin, sc, d.resolve("scenario"), ENV);
        assertEquals(0, run.hook("init RESTORE"), run.toString());
        int[] results = new int[ids.length];
        for (int i = 0; i < results.length; i++) results[i] = Integer.parseInt(run.require("restore " + ids[i]));
        List<VmaAnswer> answers = new ArrayList<>();
        for (int i = 0; i < q.size(); i++) {
            String[] f = run.require("vma " + i).split(" ");
            answers.add(new VmaAnswer(Integer.parseInt(f[0]), Integer.parseInt(f[1]), Long.parseUnsignedLong(f[2], 16)));
        }
        assertEquals("0", run.require("task-exit"), run.toString());
        String pid = run.require("task");
        return new Restore(results, answers, run.hook("RESUME_DEVICES_LATE task"), Integer.parseInt(run.require("resumed")),
                d.resolve("saved"), d.resolve("shm"), KfdTrace.read(d.resolve("trace"), Map.of("pid=" + pid + " ", "pid=task ")),
                run.toString());
    }

    static Restore restoreOurs(Path d, Path images, int[] ids, List<SizedQuery> q) {
        KfdSimulator.reset();
        KfdSimulator.setNextOffset(RESTORE_OFFSETS);
        Path trace = d.resolve("trace");
        KfdSimulator.traceStart(trace);
        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = new AmdgpuPlugin(s -> SimulatedHost.create(here, d, ENV, d.resolve("shm/hsakmt_shared_mem")));
        assertEquals(0, hook(criu, "init RESTORE", () -> plugin.init(Stage.RESTORE, criu)), String.join("\n", criu.lines()));
        KfdSimulator.Verifier task = criu.spawnTask(ids, q, d.resolve("saved"));
        int resumeRc = hook(criu, "RESUME_DEVICES_LATE task", () -> plugin.resumeDevicesLate(task.pid()));
        int resumed = KfdSimulator.resumed(task.pid());
        task.hashes();
        assertEquals(0, task.reap());
        KfdSimulator.traceMark("call exit RESTORE");
        plugin.exit(Stage.RESTORE, 0);
        KfdSimulator.traceMark("return exit RESTORE");
        KfdSimulator.traceStop();
        return new Restore(task.results(), task.answers(), resumeRc, resumed, d.resolve("saved"), d.resolve("shm"),
                KfdTrace.read(trace, Map.of("pid=" + task.pid() + " ", "pid=task ")), String.join("\n", criu.lines()));
    }

    // ---- acceptance 1: the images ----

    @Test
    void imagesDecodeToTheSameValuesAndPagesAreByteIdentical() throws Exception {
        assertEquals(names(theirs.images()), names(ours.images()), "the same image files");
        for (String name : names(theirs.images())) {
            if (!name.startsWith("amdgpu-pages-")) continue;
            assertEquals(-1, Files.mismatch(theirs.images().resolve(name), ours.images().resolve(name)), name + " byte-identical");
        }
        AmdgpuImages up = new AmdgpuImages(theirs.images());
        AmdgpuImages we = new AmdgpuImages(ours.images());
        for (int id : new int[]{RENDER_A, RENDER_B}) {
            assertEquals(up.readRenderNode(id), we.readRenderNode(id), "amdgpu-renderD-" + id + ".img");
            assertEquals(protoc("criu_render_node", theirs.images(), "amdgpu-renderD-" + id + ".img"),
                    protoc("criu_render_node", ours.images(), "amdgpu-renderD-" + id + ".img"));
        }
        CriuKfd upKfd = up.readKfd(KFD);
        CriuKfd weKfd = we.readKfd(KFD);
        // Two decoders agree on each file: upstream's schema through protoc, and our reader.
        assertEquals(protoc("criu_kfd", theirs.images(), "amdgpu-kfd-5.img"), text(upKfd));
        assertEquals(protoc("criu_kfd", ours.images(), "amdgpu-kfd-5.img"), text(weKfd));
        assertEquals(List.of(), fieldDifferences("", linksInOrder(upKfd), linksInOrder(weKfd)),
                "fields of amdgpu-kfd-5.img, upstream's vs ours");
        assertEquals(HSAKMT_SIZE, weKfd.getSharedMemSize());
        assertEquals(HSAKMT_MAGIC, weKfd.getSharedMemMagic());
    }

    static List<String> names(Path images) throws IOException {
        try (Stream<Path> s = Files.list(images)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /**
     * The image with each node's io links ordered by type and target. README, difference I1: upstream lists a node's
     * links in sysfs's readdir order, we in the order of their index, so the same links may come in another order.
     */
    static CriuKfd linksInOrder(CriuKfd kfd) {
        CriuKfd.Builder b = kfd.toBuilder();
        for (var e : b.getDeviceEntriesBuilderList()) {
            var links = new ArrayList<>(e.getIolinksList());
            links.sort(java.util.Comparator.comparingInt((dev.criugpu.amdgpu.images.proto.DevIolink l) -> l.getType())
                    .thenComparingInt(l -> l.getNodeToId()));
            e.clearIolinks().addAllIolinks(links);
        }
        return b.build();
    }

    /** Paths ("device_entries[1].iolinks[0].node_to_id") whose values differ between a and b, with both values. */
    static List<String> fieldDifferences(String at, Message a, Message b) {
        List<String> out = new ArrayList<>();
        for (var f : a.getDescriptorForType().getFields()) {
            String name = at + f.getName();
            if (f.isRepeated()) {
                int n = Math.max(a.getRepeatedFieldCount(f), b.getRepeatedFieldCount(f));
                if (a.getRepeatedFieldCount(f) != b.getRepeatedFieldCount(f)) {
                    out.add(name + " count: " + a.getRepeatedFieldCount(f) + " vs " + b.getRepeatedFieldCount(f));
                    continue;
                }
                for (int i = 0; i < n; i++) {
                    Object x = a.getRepeatedField(f, i);
                    Object y = b.getRepeatedField(f, i);
                    if (x instanceof Message mx) out.addAll(fieldDifferences(name + "[" + i + "].", mx, (Message) y));
                    else if (!x.equals(y)) out.add(name + "[" + i + "]: " + x + " vs " + y);
                }
            } else if (a.hasField(f) != b.hasField(f)) {
                out.add(name + " present: " + a.hasField(f) + " vs " + b.hasField(f));
            } else if (!a.getField(f).equals(b.getField(f))) {
                out.add(name + ": " + a.getField(f) + " vs " + b.getField(f));
            }
        }
        return out;
    }

    /**
     * A message in protobuf's text format as protoc prints it: protobuf-java escapes bytes 7, 8, 11 and 12 as \a,
     * \b, \v and \f, protoc in octal.
     */
    static String text(Message m) {
        String t = TextFormat.printer().printToString(m);
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            if (c != '\\' || i + 1 == t.length()) {
                out.append(c);
                continue;
            }
            char e = t.charAt(++i);
            int octal = switch (e) {
                case 'a' -> 7;
                case 'b' -> 8;
                case 'v' -> 11;
                case 'f' -> 12;
                default -> -1;
            };
            if (octal < 0) out.append(c).append(e);
            else out.append(String.format("\\%03o", octal));
        }
        return out.toString();
    }

    /** The payload of an image file decoded by protoc with upstream's own criu-amdgpu.proto, as text. */
    static String protoc(String type, Path images, String name) throws IOException, InterruptedException {
        byte[] payload = FramedFile.read(images, name);
        Process p = new ProcessBuilder("protoc", "--decode=" + type, "-I", upstream.protoDir().toString(), "criu-amdgpu.proto")
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try (var in = p.getOutputStream()) {
            in.write(payload);
        }
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, "protoc --decode=" + type + " " + name);
        return text;
    }

    // ---- acceptance 2: each plugin restores the other's images ----

    @Test
    void upstreamRestoresOurImages() throws IOException {
        checkRestore(restore("upstream", "our"), "upstream's plugin restoring our images", bos);
    }

    @Test
    void ourPluginRestoresUpstreamImages() throws IOException {
        checkRestore(restore("our", "upstream"), "our plugin restoring upstream's images", bos);
    }

    /**
     * Our default format is criu-dev's (ImageFormat): criu 4.2.1's plugin must still restore it. Its schema sees the
     * criu-dev fields as unknown ones (protoc shows them by number) and skips them; without them the images are the
     * ones we write in 4.2.1's format.
     */
    @Test
    void upstreamV421RestoresOurCriuDevFormatImages() throws Exception {
        Map<String, String> env = new HashMap<>(ENV);
        env.remove(ImageFormat.ENV);
        Scenario p = process();
        Dump dev = dumpOurs(new Scenario("criu-dev", p.gpus(), p.bos(), p.files(), p.ids()), dir.resolve("dump-shm"), env);
        for (int id : FILE_IDS) assertEquals(0, dev.hooks().get("DUMP_EXT_FILE " + id));
        AmdgpuImages files = new AmdgpuImages(dev.images());
        CriuKfd kfd = files.readKfd(KFD);
        assertEquals(ImageFormat.CRIU_DEV, AmdgpuImages.formatOf(kfd));
        String decoded = protoc("criu_kfd", dev.images(), "amdgpu-kfd-5.img");
        assertTrue(decoded.contains("6: 4294967295"), "4.2.1's schema does not know the BO handle:\n" + decoded);
        CriuKfd.Builder without = kfd.toBuilder();
        for (int i = 0; i < without.getBoEntriesCount(); i++) {
            without.setBoEntries(i, without.getBoEntries(i).toBuilder().clearHandle());
        }
        assertEquals(new AmdgpuImages(ours.images()).readKfd(KFD), without.build());
        for (int id : new int[]{RENDER_A, RENDER_B}) {
            CriuRenderNode node = files.readRenderNode(id);
            assertEquals(ImageFormat.CRIU_DEV, AmdgpuImages.formatOf(node));
            assertEquals(id, node.getId());
            assertEquals(id == RENDER_A ? 128 : 129, node.getDrmRenderMinor());
            assertEquals(new AmdgpuImages(ours.images()).readRenderNode(id),
                    node.toBuilder().clearId().clearDrmRenderMinor().clearNumOfBos().build());
        }
        checkRestore(restore("upstream", dev.images(), "upstream-restores-criu-dev", FILE_IDS),
                "upstream 4.2.1's plugin restoring our criu-dev-format images", bos);
    }

    @Test
    void bothPluginsAnswerTheSameMappingsForTheSameImages() {
        for (String images : List.of("upstream", "our")) {
            assertEquals(restore("upstream", images).answers(), restore("our", images).answers(), images + " images");
        }
    }

    /** Every file restored, every BO mapping moved to its GPU's node with its bytes, the task resumed, hsakmt's files back. */
    static void checkRestore(Restore r, String what, List<Bo> process) throws IOException {
        for (int i = 0; i < r.results().length; i++) assertTrue(r.results()[i] >= 0, what + ": file " + i + "\n" + r.log());
        List<Bo> mapped = process.stream().filter(b -> (b.flags() & (VRAM | GTT | DOORBELL)) != 0).toList();
        for (int i = 0; i < mapped.size(); i++) {
            Bo b = mapped.get(i);
            VmaAnswer a = r.answers().get(i);
            assertEquals(1, a.rc(), what + ": mapping of BO at " + Long.toHexString(b.addr()) + " moved");
            assertTrue(a.newOffset() >= RESTORE_OFFSETS, what + ": a restored offset, not the dumped one");
            if (b.flags() == DOORBELL) {
                assertEquals(-1, a.minor(), what + ": criu reopens /dev/kfd for doorbells");
                continue;
            }
            // device A (GPU 0x1001 at renderD128 there) is GPU 0x2001 at renderD129 here, device B the other way round
            assertEquals(b.gpu() == 0x1001 ? 129 : 128, a.minor(), what + ": BO " + i + " maps through its GPU's node");
            assertArrayEquals(b.bytes(), Files.readAllBytes(r.saved().resolve("vma-" + i + ".bin")), what + ": contents of BO " + i);
        }
        assertEquals(0, r.answers().getLast().rc(), what + ": a render-node mapping that is no BO stays as it is");
        assertEquals(0, r.resumeRc(), what + "\n" + r.log());
        assertEquals(1, r.resumed(), what + ": RESUME reached the restored task");
        // hsakmt's files were gone on this host: both come back as the image recorded them
        byte[] shm = Files.readAllBytes(r.shm().resolve("hsakmt_shared_mem"));
        assertEquals(HSAKMT_SIZE, shm.length, what + ": hsakmt's shared memory file");
        assertEquals(HSAKMT_MAGIC, ByteBuffer.wrap(shm).order(ByteOrder.nativeOrder()).getInt(), what + ": its magic");
        assertTrue(Files.exists(r.shm().resolve("sem.hsakmt_semaphore")), what + ": hsakmt's semaphore");
    }

    /**
     * What upstream v4.2 refuses and we dump on purpose (README, D5 and D6): a process that uses one of two visible
     * GPUs (upstream #2723; upstream fails and leaves the queues paused), and a render fd that criu hands over before
     * the KFD fd (upstream: ENODEV, and the queues stay paused as well). Upstream cannot restore the one-GPU image
     * onto a host with two GPUs either (it needs as many GPUs as the image has); we can.
     */
    @Test
    void whereUpstreamRefusesWeDumpAndRestore() throws IOException {
        Path shm = dir.resolve("dump-shm");
        List<Bo> oneGpu = bos.stream().filter(b -> b.gpu() == 0x1002).toList();
        Scenario subset = new Scenario("subset", List.of(0x1002), oneGpu, List.of("kfd", "/dev/dri/renderD129"),
                List.of(KFD, RENDER_B));
        Dump up = dumpUpstream(subset, shm);
        Dump we = dumpOurs(subset, shm);
        assertEquals(-Errno.EINVAL, up.hooks().get("DUMP_EXT_FILE " + KFD), "upstream: GPU 0x1001 is not the process's");
        assertTrue(up.paused(), "upstream leaves the queues paused");
        assertEquals(0, we.hooks().get("DUMP_EXT_FILE " + KFD));
        assertEquals(0, we.hooks().get("DUMP_EXT_FILE " + RENDER_B));
        assertFalse(we.paused());
        int[] ids = {KFD, RENDER_B};
        Restore theirsOfOurs = restore("upstream", we.images(), "upstream-restores-subset", ids);
        assertTrue(theirsOfOurs.results()[0] < 0, "upstream maps only as many GPUs as there are\n" + theirsOfOurs.log());
        checkRestore(restore("our", we.images(), "our-restores-subset", ids), "our plugin restoring a one-GPU image", oneGpu);

        Scenario renderFirst = new Scenario("render-first", List.of(0x1001, 0x1002), bos,
                List.of("/dev/dri/renderD128", "kfd", "/dev/dri/renderD129"), List.of(RENDER_A, KFD, RENDER_B));
        up = dumpUpstream(renderFirst, shm);
        we = dumpOurs(renderFirst, shm);
        assertEquals(-Errno.ENODEV, up.hooks().get("DUMP_EXT_FILE " + RENDER_A), "upstream: no KFD fd dumped yet");
        assertTrue(up.paused(), "upstream leaves the queues paused");
        assertEquals(List.of(0, 0, 0), List.of(we.hooks().get("DUMP_EXT_FILE " + RENDER_A), we.hooks().get("DUMP_EXT_FILE " + KFD),
                we.hooks().get("DUMP_EXT_FILE " + RENDER_B)));
        assertFalse(we.paused());
        assertEquals(new AmdgpuImages(ours.images()).readRenderNode(RENDER_A), new AmdgpuImages(we.images()).readRenderNode(RENDER_A));
    }

    // ---- acceptance 3: the ioctl sequences ----

    /**
     * Where our dump differs from upstream's, on criu's hook thread ("-" upstream only, "+" ours only); each is in
     * amdgpu-plugin's README, "Differences from upstream v4.2": D1 inventory, D2 O_CLOEXEC, D3 render nodes for the
     * copy, D4 UNPAUSE.
     */
    static final String DUMP_DIFFERENCES = """
            after criu call HANDLE_DEVICE_VMA 226:128
            - criu inventory add amdgpu_plugin
            after criu call DUMP_EXT_FILE 5
            - criu open /dev/kfd O_RDONLY
            + criu open /dev/kfd O_RDONLY|O_CLOEXEC
            after criu ioctl CRIU_OP CHECKPOINT
            - criu open /dev/dri/renderD128 O_RDWR|O_CLOEXEC
            - criu open /dev/dri/renderD129 O_RDWR|O_CLOEXEC
            + criu ioctl CRIU_OP UNPAUSE fd=target:4242 -> 0
            + criu inventory add amdgpu_plugin
            after criu call DUMP_EXT_FILE 7
            - criu ioctl CRIU_OP UNPAUSE fd=target:4242 -> 0
            """;

    /** The same for the dump's other threads: D3, the per-GPU copy workers open their render node themselves. */
    static final String DUMP_WORKER_DIFFERENCES = """
            after (start)
            + criu-thread open /dev/dri/renderD128 O_RDWR|O_CLOEXEC
            + criu-thread open /dev/dri/renderD129 O_RDWR|O_CLOEXEC
            """;

    /** Where our restore differs, on criu's hook thread and in the restored task: R1 hsakmt's files. */
    static final String RESTORE_DIFFERENCES = """
            after criu call init RESTORE
            + criu sem_open hsakmt_semaphore O_CREAT
            after task ioctl CRIU_OP RESTORE
            - task shm_open /hsakmt_shared_mem O_CREAT
            - task sem_open hsakmt_semaphore O_CREAT
            """;

    /** R2: the BO contents are refilled by criu's main process (one worker per GPU), not by threads of the task. */
    static final String RESTORE_WORKER_DIFFERENCES = """
            after (start)
            - task-thread sdma renderD128 submissions=8 packets=8 bytes=7344128
            - task-thread sdma renderD129 submissions=5 packets=5 bytes=4206592
            + criu-thread open /dev/dri/renderD128 O_RDWR|O_CLOEXEC
            + criu-thread open /dev/dri/renderD129 O_RDWR|O_CLOEXEC
            + criu-thread sdma renderD128 submissions=8 packets=8 bytes=7344128
            + criu-thread sdma renderD129 submissions=5 packets=5 bytes=4206592
            """;

    @Test
    void dumpIoctlSequencesDifferOnlyAsDocumented() {
        assertEquals(false, theirs.paused(), "upstream leaves no queue paused");
        assertEquals(false, ours.paused(), "we leave no queue paused");
        assertAll(() -> assertEquals(DUMP_DIFFERENCES, KfdTrace.diff(theirs.trace().ordered(), ours.trace().ordered()),
                        "criu's hook thread"),
                () -> assertEquals(DUMP_WORKER_DIFFERENCES, KfdTrace.diff(theirs.trace().concurrent(), ours.trace().concurrent()),
                        "other threads"));
    }

    @Test
    void restoreIoctlSequencesDifferOnlyAsDocumented() {
        List<org.junit.jupiter.api.function.Executable> checks = new ArrayList<>();
        for (String images : List.of("upstream", "our")) {
            Restore up = restore("upstream", images);
            Restore we = restore("our", images);
            checks.add(() -> assertEquals(RESTORE_DIFFERENCES, KfdTrace.diff(up.trace().ordered(), we.trace().ordered()),
                    images + " images: criu's hook thread and the task"));
            checks.add(() -> assertEquals(RESTORE_WORKER_DIFFERENCES, KfdTrace.diff(up.trace().concurrent(),
                    we.trace().concurrent()), images + " images: other threads"));
        }
        assertAll(checks);
    }
}

package dev.criugpu.it;

import com.google.protobuf.ByteString;
import dev.criugpu.amdgpu.bindings.amdgpu_h;
import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.DeviceEntries;
import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.images.PagesFileWriter;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.images.proto.KfdBoEntry;
import dev.criugpu.inventory.InventoryPlugins;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 22: an AMD restore under real criu 4.2.1 that waits in RESUME_DEVICES_LATE for a GPU-memory refill that
 * never ends gives up on SIGINT: criu exits non-zero within 2 s of the signal, with one line naming the restored
 * pid that was killed because its GPU memory was not restored, and that task is gone.
 *
 * The container has no GPU. A counter's dump is rewritten so that its stdin is an external file with a KFD image
 * of one VRAM BO (and its pages file), and criu restores it under the fake-amd device (src/test/c/fake-amd.c): a
 * seccomp filter hands the KFD and DRM ioctls of criu and its tasks to a server in the container. So the restored
 * task runs the shim's real executor (open /dev/kfd, GET_VERSION, render node, CRIU_OP RESTORE, the BO's dma-buf
 * sent to criu's main process), and the refill in criu's JVM goes through this host's real libdrm_amdgpu until its
 * first ioctl on the render node, which the server never answers — a GPU that hangs. The second test is the
 * control: without a signal criu is still waiting well past that bound, and ends only when the device fails the
 * call.
 */
@ExtendWith(DockerRequired.class)
class AmdgpuRestoreSigintIT {
    private static final String FAKE_AMD = CriuContainer.WORKLOADS + "/fake-amd";
    private static final String LIB_DIR = "/usr/lib/x86_64-linux-gnu";
    private static final long BO_BYTES = 2 << 20;
    /** The acceptance bound, from the signal to criu's end. */
    private static final Duration SIGINT_BOUND = Duration.ofSeconds(2);
    /** Bounds against a hang only. */
    private static final Duration RESTORE_TIMEOUT = Duration.ofSeconds(90);
    private static final Duration END_TIMEOUT = Duration.ofSeconds(30);

    /** The dump's fdinfo and files images, with fd 0's file turned into an external file; prints its id. */
    private static final String STDIN_AS_EXT_FILE = """
            import glob, sys, pycriu
            d = sys.argv[1]
            def load(p):
                with open(p, 'rb') as f:
                    return pycriu.images.load(f)
            def dump(img, p):
                with open(p, 'wb') as f:
                    pycriu.images.dump(img, f)
            ids = set()
            for p in glob.glob(d + '/fdinfo-*.img'):
                img = load(p)
                for e in img['entries']:
                    if e['fd'] == 0:
                        e['type'] = 'EXT'
                        ids.add(e['id'])
                dump(img, p)
            if len(ids) != 1:
                sys.exit('expected one fd 0 in ' + d + ', found file ids ' + str(sorted(ids)))
            fid = ids.pop()
            img = load(d + '/files.img')
            changed = 0
            for e in img['entries']:
                if e['id'] == fid:
                    fown = e['reg']['fown']
                    e.clear()
                    e.update({'id': fid, 'type': 'EXT', 'ext': {'id': fid, 'fown': fown}})
                    changed += 1
            if changed != 1:
                sys.exit('file id %d is in files.img %d times' % (fid, changed))
            dump(img, d + '/files.img')
            print(fid)
            """;

    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1)
            .thenRun(criu -> {
                criu.sh(FakeKfdTopology.mountInContainer() + " && touch /dev/kfd && mkdir -p /dev/dri && touch "
                        + "/dev/dri/renderD" + FakeKfdTopology.RENDER_MINOR).orFail();
                installHostLibdrm(criu);
            });

    @Test
    void sigintEndsCriuWaitingForAHungRefillWithinTwoSecondsAndKillsTheTask(CriuContainer criu, @TempDir Path host)
            throws Exception {
        Waiting w = restoreUntilTheRefillHangs(criu, host, "amd-sigint");
        try {
            w.restore.signal("INT");
            int status = w.restore.awaitEnd(END_TIMEOUT);
            Duration took = w.restore.endedAfterSignal();
            System.err.printf("AmdgpuRestoreSigintIT: criu ended %d ms after SIGINT, status %d%n", took.toMillis(),
                    status);
            CriuRun run = w.restore.run();
            assertNotEquals(0, status, run.logTail(40));
            assertTrue(took.compareTo(SIGINT_BOUND) <= 0, "criu ended " + took.toMillis() + " ms after SIGINT, more"
                    + " than " + SIGINT_BOUND.toMillis() + " ms\n" + run.logTail(40));
            List<String> killed = run.logLinesContaining("pid " + w.pid + ": GPU memory not restored");
            assertEquals(1, killed.size(), run.logTail(40));
            assertTrue(killed.getFirst().contains("SIGINT") && killed.getFirst().contains("killed it"), killed.getFirst());
            awaitGone(criu, w.pid);
        } finally {
            w.close(criu);
        }
    }

    @Test
    void withoutASignalCriuGoesOnWaitingForTheRefillUntilTheDeviceFailsIt(CriuContainer criu, @TempDir Path host)
            throws Exception {
        Waiting w = restoreUntilTheRefillHangs(criu, host, "amd-nosignal");
        try {
            // A negative observation, not synchronisation: criu is still in the wait well past the SIGINT test's bound.
            long until = System.nanoTime() + SIGINT_BOUND.multipliedBy(2).toNanos();
            while (System.nanoTime() < until) {
                assertFalse(w.restore.ended(), "criu ended on its own while the refill hung\n" + w.restore.run().logTail(40));
                Thread.sleep(100);
            }
            criu.sh("echo fail >" + w.device + "/release").orFail();
            int status = w.restore.awaitEnd(END_TIMEOUT);
            CriuRun run = w.restore.run();
            assertNotEquals(0, status, run.logTail(40));
            String pages = ImageNames.pages(w.fileId, FakeKfdTopology.GPU);
            List<String> refill = run.logLinesContaining(pages);
            assertEquals(1, refill.size(), run.logTail(40));
            assertTrue(refill.getFirst().contains("amdgpu_device_initialize"), refill.getFirst());
            List<String> killed = run.logLinesContaining("pid " + w.pid + ": GPU memory not restored");
            assertEquals(1, killed.size(), run.logTail(40));
            awaitGone(criu, w.pid);
        } finally {
            w.close(criu);
        }
    }

    /** A restore in the background whose task {@code pid} restored KFD file {@code fileId} on fake-amd in {@code device}. */
    private record Waiting(CriuInBackground restore, int pid, int fileId, String device) {
        void close(CriuContainer criu) {
            restore.kill();
            criu.exec("kill", "-9", Integer.toString(pid));
        }
    }

    /**
     * Dumps a counter, makes its stdin a KFD file of one VRAM BO, and restores it on the fake device until criu waits
     * in RESUME_DEVICES_LATE for the refill, whose first DRM call the device holds.
     */
    private static Waiting restoreUntilTheRefillHangs(CriuContainer criu, Path host, String name) throws Exception {
        String images = "/tmp/" + name + ".img";
        String device = "/tmp/" + name + ".dev";
        CounterWorkload task = CounterWorkload.startSingle(criu, "/tmp/" + name);
        int pid = task.rootPid();
        CriuCommand.dump(pid, images).withPlugins().forced().runIn(criu).orFail();
        task.awaitGone();
        int fileId = Integer.parseInt(criu.exec("python3", "-c", STDIN_AS_EXT_FILE, images).orFail().stdout().strip());
        writeAmdImages(criu, host, images, fileId, pid);

        criu.sh("rm -rf " + device + " && mkdir -p " + device + " && (setsid " + FAKE_AMD + " serve " + device
                + " </dev/null >" + device + "/serve.out 2>&1 &)").orFail();
        Eventually.await("fake-amd's socket in " + device, END_TIMEOUT,
                () -> criu.exec("test", "-S", device + "/sock").succeeded());
        CriuInBackground restore = CriuInBackground.start(criu, CriuCommand.restore(images).withPlugins().forced()
                .launchedBy(FAKE_AMD + " exec " + device), "/tmp/" + name + ".criu");
        Waiting w = new Waiting(restore, pid, fileId, device);
        try {
            Eventually.await("the refill's DRM call to be held by fake-amd", RESTORE_TIMEOUT,
                    () -> criu.fileExists(device + "/blocked"),
                    () -> (restore.ended() ? "criu ended: " + restore.run().result().describe() : "criu still runs")
                            + "\n--- fake-amd trace\n"
                            + criu.readFileIfExists(device + "/trace") + criu.readFileIfExists(device + "/serve.out")
                            + "\n--- log tail\n" + restore.run().logTail(40));
            restore.awaitLog(HookTrace.line(HookTrace.AMDGPU, "RESUME_DEVICES_LATE", HookTrace.pid(pid)),
                    RESTORE_TIMEOUT);
            String trace = criu.readFile(device + "/trace");
            assertTrue(trace.contains("GET_VERSION pid " + pid + ": ok"), trace);
            assertTrue(trace.contains("RESTORE pid " + pid + ": 1 BOs, 1 dma-bufs"), "the task did not restore its"
                    + " KFD file on the device:\n" + trace);
            assertEquals(Integer.toString(restore.pid), criu.readFile(device + "/blocked").split(" ")[0],
                    "the held DRM call is not criu's own");
            assertFalse(restore.ended(), restore.run().logTail(40));
            return w;
        } catch (RuntimeException | Error e) {
            w.close(criu);
            throw e;
        }
    }

    /** The image lists amdgpu_plugin; KFD file {@code fileId} of task {@code pid} has one VRAM BO on the GPU. */
    private static void writeAmdImages(CriuContainer criu, Path host, String images, int fileId, int pid)
            throws Exception {
        String inventory = images + "/" + InventoryPlugins.INVENTORY_IMG;
        criu.copyOut(inventory, host.resolve(InventoryPlugins.INVENTORY_IMG));
        InventoryPlugins.setPlugins(host, List.of("amdgpu_plugin"));
        criu.copyIn(host.resolve(InventoryPlugins.INVENTORY_IMG), inventory);

        KfdBoEntry bo = KfdBoEntry.newBuilder().setAddr(0x7f10_0000_0000L).setSize(BO_BYTES).setOffset(0x1_0000_0000L)
                .setAllocFlags(kfd_ioctl_h.KFD_IOC_ALLOC_MEM_FLAGS_VRAM()).setGpuId(FakeKfdTopology.GPU).build();
        CriuKfd kfd = CriuKfd.newBuilder().setPid(pid).setNumOfGpus(1).setNumOfCpus(1)
                .addAllDeviceEntries(DeviceEntries.fromTopology(FakeKfdTopology.read(host), id -> id))
                .setNumOfBos(1).addBoEntries(bo).setNumOfObjects(0).setSharedMemSize(0).setSharedMemMagic(0)
                .setPrivData(ByteString.EMPTY).build();
        new AmdgpuImages(host).writeKfd(fileId, kfd);
        String pages = ImageNames.pages(fileId, FakeKfdTopology.GPU);
        try (PagesFileWriter out = new PagesFileWriter(host, pages, BO_BYTES)) {
            out.write(ByteBuffer.allocate((int) BO_BYTES));
        }
        for (String image : List.of(ImageNames.kfd(fileId), pages)) {
            criu.copyIn(host.resolve(image), images + "/" + image);
        }
    }

    /**
     * The refill goes through libdrm_amdgpu, which the criu image does not have: this host's (libdrm-amdgpu1, which
     * libdrm-dev pulls in; test-all.sh requires libdrm-dev) is copied in with the libdrm it needs.
     */
    private static void installHostLibdrm(CriuContainer criu) {
        for (String lib : List.of("libdrm.so.2", amdgpu_h.LIBRARY)) {
            Path onHost = Path.of(LIB_DIR, lib);
            if (!Files.isReadable(onHost)) {
                throw new AssertionError(onHost + " is missing: the AMD refill needs libdrm_amdgpu (Debian:"
                        + " apt-get install libdrm-amdgpu1, or libdrm-dev, which test-all.sh requires)");
            }
            criu.copyIn(onHost, LIB_DIR + "/" + lib);
        }
        criu.exec("ldconfig").orFail();
    }

    private static void awaitGone(CriuContainer criu, int pid) {
        Eventually.await("restored pid " + pid + " to be gone", END_TIMEOUT, () -> !criu.pidInUse(pid),
                () -> criu.sh("cat /proc/" + pid + "/status").stdout());
    }
}

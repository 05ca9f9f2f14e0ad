package dev.criugpu.it;

import com.google.protobuf.ByteString;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.DeviceEntries;
import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.InventoryPlugins;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 12 (DESIGN rule 3 as practised: Java starts at restore init): every JVM thread a restore will ever have exists
 * before criu forks, and none holds a pid of the tree. The AMD plugin runs its real restore session here: an image
 * listing amdgpu_plugin with a KFD image of one GPU, on a container whose KFD topology (a tmpfs over /sys/class) has
 * that GPU, so the plugin builds its plan, hands it to the shim's executor, and starts its refill poller and the
 * refill worker of the GPU; the tree's tasks hold no KFD file, so nothing calls into a device. With the next free
 * pid set just below the tree's pids, a thread started later would take one of them and the restore would fail; the
 * threads listed at RESUME_DEVICES_LATE (every task exists by then) must all have existed after the last init.
 */
@ExtendWith(DockerRequired.class)
class RestoreThreadPidsIT {
    private static final int KFD_FILE = 1;

    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1)
            .thenRun(criu -> criu.sh(FakeKfdTopology.mountInContainer()).orFail());

    @Test
    void everyJvmThreadOfTheRestoreIsStartedBeforeCriuForksAndHoldsNoPidOfTheTree(CriuContainer criu,
                                                                                  @TempDir Path host) throws Exception {
        CounterWorkload tree = CounterWorkload.startTree(criu, "/tmp/pids");
        CriuCommand.dump(tree.rootPid(), "/tmp/pids.img").withPlugins().forced().runIn(criu).orFail();
        List<Long> atDump = tree.awaitDumped();
        needsAmdgpu(criu, host, "/tmp/pids.img");

        int lowest = tree.counters().stream().mapToInt(CounterWorkload.Counter::pid).min().orElseThrow();
        CriuRun restore = CriuCommand.restore("/tmp/pids.img").withPlugins().forced()
                .prelude("echo " + (lowest - 1) + " > /proc/sys/kernel/ns_last_pid").runIn(criu).orFail();
        tree.assertContinuedFrom(atDump);
        assertEquals(1, restore.logLinesContaining("amdgpu_plugin: restoring 1 KFD file(s)").size(), restore.logTail(40));

        Map<Integer, String> afterInit = threads(restore.logLinesContaining(": JVM threads after init: ").getLast());
        assertTrue(afterInit.containsValue("amdgpu-refill"), "no refill poller: " + afterInit);
        // a thread's name is cut to 15 bytes in /proc: amdgpu-refill-1001
        assertTrue(afterInit.containsValue("amdgpu-refill-1"), "no refill worker for GPU 0x1001: " + afterInit);
        Set<Integer> treePids = tree.counters().stream().map(CounterWorkload.Counter::pid).collect(Collectors.toSet());
        long pidMax = Long.parseLong(criu.exec("cat", "/proc/sys/kernel/pid_max").orFail().stdout().strip());
        afterInit.forEach((tid, name) -> {
            assertFalse(treePids.contains(tid), "JVM thread " + tid + " " + name + " holds a pid of the tree");
            if (!name.equals("criu")) assertTrue(tid > pidMax - 1025, "thread " + tid + " " + name + " was not parked");
        });

        List<String> atResume = restore.logLinesContaining(": JVM threads: ");
        assertFalse(atResume.isEmpty(), "no thread list at RESUME_DEVICES_LATE");
        for (String line : atResume) {
            Map<Integer, String> now = threads(line);
            now.keySet().removeAll(afterInit.keySet());
            assertEquals(Map.of(), now, "threads started while criu restored the tree");
        }
        for (CounterWorkload.Counter c : tree.counters()) HookTrace.assertResumedLate(restore, c.pid());
        tree.kill();
    }

    /** The image now lists amdgpu_plugin and holds a KFD image of GPU 0x1001 (pid of a task it does not have). */
    private static void needsAmdgpu(CriuContainer criu, Path host, String images) throws ImageException, IOException {
        String inventory = images + "/" + InventoryPlugins.INVENTORY_IMG;
        criu.copyOut(inventory, host.resolve(InventoryPlugins.INVENTORY_IMG));
        InventoryPlugins.setPlugins(host, List.of("amdgpu_plugin"));
        criu.copyIn(host.resolve(InventoryPlugins.INVENTORY_IMG), inventory);

        Topology local = FakeKfdTopology.read(host);
        CriuKfd kfd = CriuKfd.newBuilder().setPid(999_999).setNumOfGpus(1).setNumOfCpus(1)
                .addAllDeviceEntries(DeviceEntries.fromTopology(local, id -> id)).setNumOfBos(0).setNumOfObjects(0)
                .setSharedMemSize(0).setSharedMemMagic(0).setPrivData(ByteString.EMPTY).build();
        new AmdgpuImages(host).writeKfd(KFD_FILE, kfd);
        criu.copyIn(host.resolve(ImageNames.kfd(KFD_FILE)), images + "/" + ImageNames.kfd(KFD_FILE));
    }

    /** {@code tid name, ...} of a "JVM threads" line, by tid. */
    private static Map<Integer, String> threads(String line) {
        Map<Integer, String> byTid = new LinkedHashMap<>();
        for (String t : line.substring(line.indexOf(": ", line.indexOf("JVM threads")) + 2).split(", ")) {
            int space = t.indexOf(' ');
            byTid.put(Integer.parseInt(t.substring(0, space)), t.substring(space + 1));
        }
        return byTid;
    }
}

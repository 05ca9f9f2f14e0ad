package dev.criugpu.it;

import com.google.protobuf.ByteString;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.DeviceEntries;
import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.topology.SysfsTopologyReader;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.InventoryPlugins;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
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
    private static final int GPU = 0x1001;
    private static final String TOPOLOGY = "/sys/class/kfd/kfd/topology";
    private static final int KFD_FILE = 1;

    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1)
            .thenRun(criu -> criu.sh("mount -t tmpfs tmpfs /sys/class && " + script("/sys/class/kfd/kfd/topology"))
                    .orFail());

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

        Path sysfs = host.resolve("topology");
        for (var f : files(sysfs.toString()).entrySet()) {
            Files.createDirectories(Path.of(f.getKey()).getParent());
            Files.writeString(Path.of(f.getKey()), f.getValue());
        }
        Topology local = new SysfsTopologyReader(sysfs).read("Checkpoint");
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

    /** A KFD topology of one CPU and one MI100-like GPU (gpu_id 0x1001, renderD128), linked by PCIe (AmdgpuFifoImageIT too). */
    private static Map<String, String> files(String root) {
        Map<String, String> f = new LinkedHashMap<>();
        f.put(root + "/nodes/0/gpu_id", "0\n");
        f.put(root + "/nodes/0/properties", "cpu_cores_count 16\nsimd_count 0\nmem_banks_count 1\nio_links_count 1\n");
        f.put(root + "/nodes/0/io_links/0/properties", "type 2\nnode_from 0\nnode_to 1\nweight 20\n");
        f.put(root + "/nodes/1/gpu_id", GPU + "\n");
        f.put(root + "/nodes/1/properties", String.join("\n", "cpu_cores_count 0", "simd_count 480", "mem_banks_count 1",
                "caches_count 200", "io_links_count 1", "max_waves_per_simd 8", "lds_size_in_kb 64", "gds_size_in_kb 0",
                "num_gws 64", "wave_front_size 64", "array_count 8", "simd_arrays_per_engine 1", "cu_per_simd_array 15",
                "simd_per_cu 4", "max_slots_scratch_cu 32", "vendor_id 4098", "device_id 29580", "location_id 769",
                "domain 0", "drm_render_minor 128", "hive_id 0", "num_sdma_engines 2", "num_sdma_xgmi_engines 6",
                "num_sdma_queues_per_engine 8", "num_cp_queues 24", "fw_version 70", "capability 672",
                "sdma_fw_version 18") + "\n");
        f.put(root + "/nodes/1/mem_banks/0/properties", "heap_type 1\nsize_in_bytes 34359738368\nflags 0\n");
        f.put(root + "/nodes/1/io_links/0/properties", "type 2\nnode_from 1\nnode_to 0\nweight 20\n");
        return f;
    }

    static String script(String root) {
        return files(root).entrySet().stream().map(e -> "mkdir -p " + Path.of(e.getKey()).getParent() + " && printf '"
                + e.getValue().replace("\n", "\\n") + "' > " + e.getKey()).collect(Collectors.joining(" && "));
    }
}

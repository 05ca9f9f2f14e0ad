package dev.criugpu.amdgpu;

import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.SimulatedCriu;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess.Bo;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.LogLevel;
import dev.criugpu.api.Stage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A tree of two GPU processes (upstream restores single processes only): dumped in one criu dump, restored by two
 * real forked tasks running the native executor, whose dma-bufs criu's main process refills concurrently; each
 * task then checks, by hashing its own mappings, that it holds exactly its own BO contents.
 */
class AmdgpuPluginTreeTest {
    @TempDir
    Path dir;

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
    }

    @Test
    void twoProcessesAreRefilledIntoTheirOwnTasks() throws Exception {
        List<Bo> first = SimulatedGpuProcess.bos(new Random(1));
        List<Bo> second = SimulatedGpuProcess.bos(new Random(2));
        Path images = SimulatedGpuProcess.dumpTree(dir, List.of(first, second), Map.of());
        AmdgpuImages files = new AmdgpuImages(images);
        KfdSimulator.reset();

        SimulatedCriu criu = new SimulatedCriu(Stage.RESTORE, images, InventoryClaim.LISTED);
        AmdgpuPlugin plugin = SimulatedGpuProcess.restorePlugin(dir, Map.of("KFD_MAX_BUFFER_SIZE", "512K"));
        assertEquals(0, plugin.init(Stage.RESTORE, criu), String.join("\n", criu.lines()));
        var a = criu.spawnVerifier(5, SimulatedGpuProcess.contentQueries(first, files.readKfd(5)));
        var b = criu.spawnVerifier(7, SimulatedGpuProcess.contentQueries(second, files.readKfd(7)));
        assertTrue(a.restored() >= 0 && b.restored() >= 0, "both tasks restored their KFD file");

        // RESUME_DEVICES_LATE waits for every refill, then resumes each task's queues.
        assertEquals(0, plugin.resumeDevicesLate(a.pid()));
        assertEquals(0, plugin.resumeDevicesLate(b.pid()));
        assertEquals(List.of(), criu.lines(LogLevel.ERROR));
        assertEquals(1, KfdSimulator.resumed(a.pid()));
        assertEquals(1, KfdSimulator.resumed(b.pid()));

        assertArrayEquals(expected(first), a.hashes(), "task of the first process");
        assertArrayEquals(expected(second), b.hashes(), "task of the second process");
        assertEquals(0, a.reap());
        assertEquals(0, b.reap());
        assertTrue(KfdSimulator.drmSubmits(128) > 0 && KfdSimulator.drmSubmits(129) > 0, "both GPUs refilled");
        plugin.exit(Stage.RESTORE, 0);
        assertEquals(0, KfdSimulator.drmLive());
    }

    private static long[] expected(List<Bo> bos) {
        return bos.stream().filter(Bo::hasContents).mapToLong(bo -> KfdSimulator.fnv1a(bo.bytes())).toArray();
    }
}

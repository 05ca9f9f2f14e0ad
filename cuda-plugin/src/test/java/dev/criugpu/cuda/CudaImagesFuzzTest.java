package dev.criugpu.cuda;

import dev.criugpu.api.ByteMutations;

import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.log.CriuLog;
import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.cuda.gpu.GpuInfo;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.image.CudaGpuEntry;
import dev.criugpu.cuda.image.CudaInheritedEntry;
import dev.criugpu.cuda.image.CudaInheritedFile;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.image.CudaTaskImages;
import dev.criugpu.cuda.inherited.InheritedDevices;
import dev.criugpu.cuda.inherited.InheritedPlan;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.ImageIO;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The CUDA plugin's own images, mutated and truncated (seeded, bounded by iteration count), read as a restore reads
 * them: our task records ({@code cuda-plugin-<pid>.img}) up to the restore session that acts on them, and the
 * inherited-files record up to the stand-in plan. Each either decodes into something the restore can act on, or is
 * refused with one line naming the file; nothing else escapes, nothing hangs, and reading writes nothing.
 */
@Timeout(120)
class CudaImagesFuzzTest {
    private static final int ITERATIONS = 1500;
    private static final int PID = 4242;
    private static final GpuInfo H100 = new GpuInfo(GpuUuid.parse("GPU-5d5b4a10-7c3f-4e0b-9a51-3f0c2d1e8b77"), 0,
            "NVIDIA H100 80GB HBM3", "");
    private static final GpuInfo OTHER = new GpuInfo(GpuUuid.parse("GPU-00000000-1111-2222-3333-444444444444"), 1,
            "NVIDIA H100 80GB HBM3", "");

    @TempDir
    Path images;
    TestServices services;

    @BeforeEach
    void setUp() {
        services = new TestServices(Stage.RESTORE, images, InventoryClaim.LISTED);
        CriuLog.register("dev.criugpu.cuda", services);
    }

    @Test
    void mutatedTaskRecordsRestoreOrAreRefusedWithOneLine() throws Exception {
        CudaTaskEntry seed = CudaTaskEntry.newBuilder().setPid(PID).setInitialState(CudaState.RUNNING.value)
                .setBackend("driver").setDriverApi(12080)
                .addGpus(gpu(H100).setUsedMib(8192)).addVisible(gpu(H100)).addVisible(gpu(OTHER)).build();
        CudaTaskImages.write(images, seed);
        Path file = CudaTaskImages.file(images, PID);
        byte[] original = Files.readAllBytes(file);
        Random random = new Random(0x5eed_c0da_1L);
        int decoded = 0;
        int rejected = 0;
        for (int i = 0; i < ITERATIONS; i++) {
            Files.write(file, mutate(original, random));
            try {
                List<CudaTaskEntry> records = CudaTaskImages.readAll(images);
                FakeDriver.Events events = new FakeDriver.Events();
                FakeThreads threads = new FakeThreads(events);
                RestoreSession s = new RestoreSession(CudaDeps.inCriu(new FakeDriver(events, threads), threads),
                        records, Set.of(PID), true, List.of(H100, OTHER), List.of(H100, OTHER), Map.of(), false);
                s.blockingError().ifPresent(why -> assertOneLine(why));
                decoded++;
            } catch (ImageException e) {
                assertOneLine(e.getMessage());
                assertTrue(e.getMessage().startsWith(file + ": "), e.getMessage());
                rejected++;
            } catch (RuntimeException e) {
                fail("iteration " + i + ": " + e, e);
            }
            assertEquals(List.of(file), filesIn(images), "reading wrote nothing");
        }
        assertTrue(decoded > 50 && rejected > 50, "decoded " + decoded + ", rejected " + rejected);
    }

    @Test
    void mutatedInheritedRecordsBecomeAPlanOrAreRefusedWithOneLine() throws Exception {
        CudaInheritedEntry seed = CudaInheritedEntry.newBuilder().setMappings(true)
                .addFiles(CudaInheritedFile.newBuilder().setId(11).setPath("/dev/nvidiactl").setFlags(02 | 04000))
                .addFiles(CudaInheritedFile.newBuilder().setId(12).setPath("/dev/nvidia0").setFlags(02))
                .addFiles(CudaInheritedFile.newBuilder().setId(13).setPath("/dev/nvidia-uvm").setFlags(0)).build();
        Path file = images.resolve(InheritedDevices.IMAGE);
        ImageIO.writeEntries(file, InheritedDevices.MAGIC, List.of(seed));
        byte[] original = Files.readAllBytes(file);
        Random random = new Random(0x5eed_1dd1L);
        int decoded = 0;
        int rejected = 0;
        for (int i = 0; i < ITERATIONS; i++) {
            Files.write(file, mutate(original, random));
            try (ChildPlan plan = new ChildPlan("cuda")) {
                InheritedDevices.read(images).ifPresent(e -> InheritedPlan.addTo(plan, e));
                plan.sealed();
                decoded++;
            } catch (ImageException e) {
                assertOneLine(e.getMessage());
                assertTrue(e.getMessage().startsWith(file + ": "), e.getMessage());
                rejected++;
            } catch (RuntimeException e) {
                fail("iteration " + i + ": " + e, e);
            }
            assertEquals(List.of(file), filesIn(images), "reading wrote nothing");
        }
        assertTrue(decoded > 50 && rejected > 50, "decoded " + decoded + ", rejected " + rejected);
    }

    private static CudaGpuEntry.Builder gpu(GpuInfo g) {
        return CudaGpuEntry.newBuilder().setUuid(g.uuid().text()).setModel(g.model()).setMinor(g.minor());
    }

    private static List<Path> filesIn(Path dir) throws java.io.IOException {
        try (var s = Files.list(dir)) {
            return s.toList();
        }
    }

    private static void assertOneLine(String message) {
        assertFalse(message.isBlank(), "an empty message");
        assertFalse(message.contains("\n") || message.contains("\r"), message);
    }

    /**
     * One of: flip bits, overwrite a byte, cut the tail, insert bytes, rewrite the first entry's length, or change a
     * varint in the message body (where protobuf keeps numbers: pids, states, flags, sizes).
     */
    static byte[] mutate(byte[] in, Random r) {
        byte[] b = in.clone();
        int which = r.nextInt(ByteMutations.GENERIC + 2);
        if (which < ByteMutations.GENERIC) return ByteMutations.generic(which, b, r);
        switch (which) {
            case 4 -> {
                int v = r.nextBoolean() ? r.nextInt() : r.nextInt(64);
                for (int k = 0; k < 4; k++) b[8 + k] = (byte) (v >>> (8 * k)); // common magic, image magic, length
            }
            default -> {
                // a byte of the body with its continuation bit set: the start of a long varint, or a field tag
                int at = 12 + r.nextInt(b.length - 12);
                b[at] = (byte) (0x80 | r.nextInt(128));
            }
        }
        return b;
    }
}

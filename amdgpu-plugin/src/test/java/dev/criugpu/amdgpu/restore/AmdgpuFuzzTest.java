package dev.criugpu.amdgpu.restore;

import dev.criugpu.api.ByteMutations;

import dev.criugpu.amdgpu.bindings.socket_h;
import dev.criugpu.amdgpu.images.AmdgpuImages;
import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.images.PagesFileReader;
import dev.criugpu.amdgpu.images.proto.CriuKfd;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.SimulatedGpuProcess;
import dev.criugpu.amdgpu.topology.Topology;
import dev.criugpu.api.CriuException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Every input the AMD restore reads, mutated from real ones (seeded, bounded by iteration count): the KFD and
 * render-node images (through the whole restore plan: framing, protobuf, counts, sizes, GPU matching), the pages
 * files, hsakmt's recorded size, and refill requests arriving on a channel. Each either works or is refused with one
 * line (a {@link CriuException} without a newline, naming the file where there is one); nothing else escapes, no fd
 * is left open, and a refusal creates nothing. The timeout only guards against a hang.
 */
@Timeout(300)
class AmdgpuFuzzTest {
    private static final int ITERATIONS = 600;

    @TempDir
    Path dir;

    private Path images;
    private Topology here;

    @BeforeEach
    void dumped() throws IOException {
        images = SimulatedGpuProcess.seededDump(dir);
        KfdSimulator.reset();
        here = SimulatedGpuProcess.swappedHere(dir);
    }

    @AfterEach
    void tearDown() {
        KfdSimulator.reset();
    }

    private static void assertOneLine(CriuException e, String prefix, String where) {
        String m = e.getMessage();
        assertTrue(m != null && !m.isBlank(), where + ": empty message");
        assertFalse(m.contains("\n"), where + ": " + m);
        assertTrue(m.startsWith(prefix), where + ": " + m);
    }

    @Test
    void mutatedKfdAndRenderNodeImagesGiveAPlanOrOneLine() throws Exception {
        Random r = new Random(0xa3d_f022);
        String[] victims;
        try (Stream<Path> s = Files.list(images)) {
            victims = s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("amdgpu-kfd-")
                    || n.startsWith("amdgpu-renderD-")).sorted().toArray(String[]::new);
        }
        assertTrue(victims.length >= 2, Arrays.toString(victims));
        long fds = openFds();
        int built = 0;
        int refused = 0;
        for (int i = 0; i < ITERATIONS; i++) {
            String victim = victims[i % victims.length];
            Path original = images.resolve(victim);
            Files.write(original.resolveSibling(victim + ".mutated"), mutate(Files.readAllBytes(original), r));
            Path copy = dir.resolve("fuzz");
            copyImages(copy, victim);
            try (RestorePlan plan = RestorePlan.build(new AmdgpuImages(copy), here, Map.of(), e -> { }, id -> 0)) {
                assertFalse(plan.kfds().isEmpty());
                built++;
            } catch (CriuException e) {
                assertOneLine(e, "", "iteration " + i + " on " + victim);
                refused++;
            } catch (RuntimeException | Error e) {
                fail("iteration " + i + " on " + victim + ": " + e, e);
            }
            // the reader alone names the file
            if (victim.startsWith("amdgpu-kfd-")) {
                try {
                    new AmdgpuImages(copy).readKfd(SimulatedGpuProcess.KFD_FILE);
                } catch (CriuException e) {
                    assertOneLine(e, victim + ": ", "iteration " + i);
                }
            }
        }
        // both outcomes must occur, or the mutations exercise nothing (framing and counts refuse most of them)
        assertTrue(built >= 10 && refused > 100, "built " + built + ", refused " + refused);
        assertEquals(fds, openFds(), "no fd left open");
    }

    /** The dumped images into {@code to}, with {@code victim} replaced by its mutated copy. */
    private void copyImages(Path to, String victim) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> old = Files.list(to)) {
            for (Path p : old.toList()) Files.delete(p);
        }
        try (Stream<Path> s = Files.list(images)) {
            for (Path p : s.toList()) {
                String name = p.getFileName().toString();
                if (name.endsWith(".mutated")) continue;
                Path from = name.equals(victim) ? images.resolve(victim + ".mutated") : p;
                Files.copy(from, to.resolve(name), StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    @Test
    void mutatedPagesFilesAreReadWholeOrRefusedWithOneLine() throws Exception {
        Random r = new Random(0x9a9e5);
        CriuKfd kfd = new AmdgpuImages(images).readKfd(SimulatedGpuProcess.KFD_FILE);
        Map<Integer, Long> totals = new java.util.TreeMap<>();
        for (var bo : kfd.getBoEntriesList()) {
            if (dev.criugpu.amdgpu.kfd.BoBucket.hasContents(bo.getAllocFlags())) totals.merge(bo.getGpuId(), bo.getSize(), Long::sum);
        }
        long fds = openFds();
        int read = 0;
        int refused = 0;
        for (int i = 0; i < ITERATIONS / 3; i++) {
            var gpu = totals.entrySet().stream().skip(i % totals.size()).findFirst().orElseThrow();
            String name = ImageNames.pages(SimulatedGpuProcess.KFD_FILE, gpu.getKey());
            Path fuzz = Files.createDirectories(dir.resolve("pages"));
            Files.write(fuzz.resolve(name), mutate(Files.readAllBytes(images.resolve(name)), r));
            try (PagesFileReader in = new PagesFileReader(fuzz, name, gpu.getValue())) {
                in.readFully(0, ByteBuffer.allocate((int) in.total()));
                read++;
            } catch (CriuException e) {
                assertOneLine(e, name + ": ", "iteration " + i);
                refused++;
            } catch (RuntimeException | Error e) {
                fail("iteration " + i + " on " + name + ": " + e, e);
            }
        }
        assertTrue(read > 5 && refused > 50, "read " + read + ", refused " + refused);
        assertEquals(fds, openFds());
    }

    @Test
    void anyRecordedHsakmtSizeCreatesAFileOfAtMostTheBoundOrNothing() throws Exception {
        Random r = new Random(0x5a5a);
        for (int i = 0; i < ITERATIONS / 3; i++) {
            long size = switch (i % 4) {
                case 0 -> r.nextLong();
                case 1 -> r.nextInt((int) HsakmtFiles.MAX_SIZE * 2) + 1;
                case 2 -> HsakmtFiles.MAX_SIZE + (r.nextBoolean() ? 0 : 1);
                default -> 1L << r.nextInt(64);
            };
            Path shm = Files.createDirectories(dir.resolve("shm-" + i));
            KfdSimulator.setShmDir(shm);
            CriuKfd k = HsakmtFilesTest.kfd(size, r.nextInt());
            Path file = shm.resolve("hsakmt_shared_mem");
            try {
                HsakmtFiles.recreate(KfdSimulator.syscalls(), file, List.of(k));
                assertTrue(Long.compareUnsigned(size, HsakmtFiles.MAX_SIZE) <= 0, "created for " + size);
                assertEquals(size, Files.size(file));
            } catch (CriuException e) {
                assertOneLine(e, "a KFD image of pid 1 records hsakmt's shared memory file", "size " + size);
                try (Stream<Path> s = Files.list(shm)) {
                    assertEquals(List.of(), s.toList(), "a refusal creates nothing");
                }
            }
        }
    }

    @Test
    void mutatedRefillRequestsAreTakenOrRefusedWithOneLineAndNeverHang() throws Exception {
        Random r = new Random(0x4ef111);
        long fds = openFds();
        int taken = 0;
        int refused = 0;
        int stop = UnixSockets.eventFd();
        UnixSockets.signal(stop); // what has not arrived once the peer is gone never will
        try (Arena a = Arena.ofConfined()) {
            byte[] bytes = RefillProtocol.request(5, new int[] {0, 1, 3});
            for (int i = 0; i < ITERATIONS; i++) {
                byte[] m = i % 10 == 0 ? bytes.clone() : mutate(bytes, r);
                int[] pair = UnixSockets.pair();
                try {
                    MemorySegment out = a.allocateFrom(JAVA_BYTE, m.length == 0 ? new byte[1] : m);
                    MemorySegment st = a.allocate(socket_h.CALL_STATE);
                    if (m.length > 0) assertEquals(m.length, socket_h.send(st, pair[1], out, m.length, socket_h.MSG_NOSIGNAL()));
                    UnixSockets.close(pair[1]);
                    pair[1] = -1;
                    RefillRequest req = RefillRequestReader.read(pair[0], 5, stop);
                    if (req != null) {
                        UnixSockets.closeAll(req.fds());
                        taken++;
                    }
                } catch (RefillRequestReader.Refused e) {
                    assertEquals(5, e.fileId());
                    assertOneLine(e, "amdgpu-kfd-5.img: refill request", "iteration " + i);
                    refused++;
                } catch (RuntimeException | Error e) {
                    fail("iteration " + i + ": " + e, e);
                } finally {
                    UnixSockets.close(pair[0]);
                    if (pair[1] >= 0) UnixSockets.close(pair[1]);
                }
            }
        } finally {
            UnixSockets.close(stop);
        }
        assertTrue(refused > 100, "taken " + taken + ", refused " + refused);
        assertEquals(fds, openFds(), "every fd received or opened was closed");
    }

    /** One of: flip bits, overwrite a byte, cut the tail, insert bytes, or rewrite the 8-byte length header. */
    static byte[] mutate(byte[] in, Random r) {
        byte[] b = in.clone();
        if (b.length == 0) return b;
        int which = r.nextInt(ByteMutations.GENERIC + 1);
        if (which < ByteMutations.GENERIC) return ByteMutations.generic(which, b, r);
        // the format's own: rewrite a length field
        if (b.length >= 8) {
            long v = r.nextBoolean() ? r.nextLong() : r.nextInt(1 << 16);
            ByteBuffer.wrap(b).order(java.nio.ByteOrder.nativeOrder()).putLong(0, v);
        }
        return b;
    }

    private static long openFds() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }
}

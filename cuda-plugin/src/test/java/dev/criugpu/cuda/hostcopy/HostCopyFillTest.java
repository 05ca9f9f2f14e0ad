package dev.criugpu.cuda.hostcopy;

import dev.criugpu.api.sys.TaskMemory;
import dev.criugpu.cuda.image.CudaHostCopyEntry;
import dev.criugpu.cuda.image.CudaHostCopyRange;
import dev.criugpu.inventory.Pagemap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The restore's side: a real process's memory filled from a pages file, with several threads. */
class HostCopyFillTest {
    static final int MIB = 1 << 20;
    @TempDir
    Path dir;
    Process task;
    long base;
    byte[] file;

    /** A process holding 200 MiB of fresh anonymous memory (a restored task's empty host copy), its address on stdout. */
    @BeforeEach
    void startTask() throws Exception {
        assumeTrue(new ProcessBuilder("python3", "-c", "").start().waitFor() == 0, "python3 is not installed");
        task = new ProcessBuilder("python3", "-c", "import mmap, ctypes, sys\n"
                + "m = mmap.mmap(-1, 200 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n"
                + "print(hex(ctypes.addressof(ctypes.c_char.from_buffer(m))), flush=True)\n"
                + "sys.stdin.read()\n").redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String line = new BufferedReader(new InputStreamReader(task.getInputStream())).readLine();
        base = Long.decode(line);
        file = new byte[300 * MIB];
        new Random(54).nextBytes(file);
        Files.write(Pagemap.pagesFile(dir, 3), file);
    }

    @AfterEach
    void stopTask() {
        if (task != null) task.destroyForcibly();
    }

    private byte[] taskBytes(long address, int length) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(length);
            TaskMemory.read((int) task.pid(), address, s);
            return s.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        }
    }

    private static CudaHostCopyRange range(long vaddr, long length, long offset) {
        return CudaHostCopyRange.newBuilder().setVaddr(vaddr).setLength(length).setOffset(offset).build();
    }

    @Test
    void everyRangeLandsWhereTheRecordSays() throws Exception {
        // 130 MiB crosses pieces (64 MiB) and is split over threads; a second range from another part of the file
        CudaHostCopyEntry record = CudaHostCopyEntry.newBuilder().setPid(1).setPagesId(3)
                .addRanges(range(base, 130L * MIB, 100L * MIB))
                .addRanges(range(base + 150L * MIB, 4096, 7 * 4096)).build();
        try (HostCopyFill fill = new HostCopyFill(4)) {
            assertEquals(130L * MIB + 4096, fill.fill(dir, record, (int) task.pid()));
        }
        assertArrayEquals(Arrays.copyOfRange(file, 100 * MIB, 230 * MIB), taskBytes(base, 130 * MIB));
        assertArrayEquals(Arrays.copyOfRange(file, 7 * 4096, 8 * 4096), taskBytes(base + 150L * MIB, 4096));
        assertArrayEquals(new byte[4096], taskBytes(base + 149L * MIB, 4096), "nothing written outside the ranges");
    }

    @Test
    void aRangeTheTaskLacksOrAShortFileFailsNamingIt() {
        int pid = (int) task.pid();
        CudaHostCopyEntry outside = CudaHostCopyEntry.newBuilder().setPid(1).setPagesId(3)
                .addRanges(range(base + 196L * MIB, 8L * MIB, 0)).build();
        try (HostCopyFill fill = new HostCopyFill(2)) {
            IOException e = assertThrows(IOException.class, () -> fill.fill(dir, outside, pid));
            assertTrue(e.getMessage().contains("pid " + pid) && e.getMessage().contains("EFAULT"), e.getMessage());
            CudaHostCopyEntry beyond = outside.toBuilder().setRanges(0, range(base, 8L * MIB, 299L * MIB)).build();
            e = assertThrows(IOException.class, () -> fill.fill(dir, beyond, pid));
            assertTrue(e.getMessage().contains("pages-3.img"), e.getMessage());
            CudaHostCopyEntry noFile = outside.toBuilder().setPagesId(4).build();
            assertThrows(IOException.class, () -> fill.fill(dir, noFile, pid));
        }
    }
}

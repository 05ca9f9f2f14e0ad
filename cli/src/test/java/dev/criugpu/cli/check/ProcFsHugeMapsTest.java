package dev.criugpu.cli.check;

import dev.criugpu.api.sys.HugeMaps;
import dev.criugpu.api.sys.SmallHeapJvm;
import dev.criugpu.cli.check.ProcFs.Mapping;
import dev.criugpu.cli.check.ProcFs.Task;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * check's reading of /proc/PID/maps costs the same whatever its length: a 200 MB one in a JVM of 64 MiB (a quarter of
 * bin/criu-gpu's bound); mappings of note past a budget are left unread, and check says so.
 */
class ProcFsHugeMapsTest {
    private static Path task(Path proc, int pid) throws Exception {
        Path d = Files.createDirectories(proc.resolve(Integer.toString(pid)));
        Files.writeString(d.resolve("comm"), "python3\n");
        Files.writeString(d.resolve("status"), "Name:\tpython3\nTgid:\t" + pid + "\nPPid:\t1\n");
        Files.writeString(d.resolve("environ"), "PATH=/usr/bin\0");
        Files.createDirectories(d.resolve("fd"));
        return d;
    }

    @Test
    void theNvidiaMappingAfter200MbOfMappingsIsFoundIn64MiB(@TempDir Path dir) throws Exception {
        Path d = task(dir.resolve("proc"), 4242);
        HugeMaps.write(d.resolve("maps"), "7f2000200000-7f2000400000 rw-s 00000000 00:05 1025 /dev/nvidia3\n");
        SmallHeapJvm child = SmallHeapJvm.run(Reader.class, dir.resolve("proc").toString(), "4242");
        assertEquals(0, child.exitCode(), child.output());
        assertEquals("maps [/dev/nvidia3] unreadable []", child.output().strip().lines().toList().getLast());
    }

    @Test
    void mappingsOfNotePastTheBudgetAreNotKeptAndTheCutIsNoted(@TempDir Path dir) throws Exception {
        Path d = task(dir.resolve("proc"), 4242);
        StringBuilder maps = new StringBuilder("7f0000000000-7f0000001000 r--p 00000000 08:01 7 /usr/lib/libc.so.6\n");
        String name = "/dev/shm/" + "n".repeat(200);
        for (int i = 0; i < 2 * ProcFs.MAPS_KEPT_BYTES / name.length(); i++) {
            maps.append(Long.toHexString(0x10000000L + i * 0x1000L)).append('-')
                    .append(Long.toHexString(0x10001000L + i * 0x1000L)).append(" rw-s 00000000 00:1a ").append(100 + i)
                    .append(' ').append(name).append(i).append('\n');
        }
        Files.writeString(d.resolve("maps"), maps);
        Task t = new ProcFs(dir.resolve("proc")).task(4242).orElseThrow();
        long kept = t.maps().stream().mapToLong(ProcFs::cost).sum();
        assertTrue(kept <= ProcFs.MAPS_KEPT_BYTES && kept > ProcFs.MAPS_KEPT_BYTES / 2, "kept " + kept);
        assertTrue(t.maps().stream().allMatch(m -> m.path().startsWith(name)), "libc is read by no check: not kept");
        assertEquals(1, t.unreadable().size(), t.unreadable().toString());
        assertTrue(t.unreadable().getFirst().startsWith("maps (more than "), t.unreadable().toString());
    }

    /** The child: the NVIDIA mappings of a task of a /proc tree, and what could not be read. */
    public static final class Reader {
        public static void main(String[] args) {
            Task t = new ProcFs(Path.of(args[0])).task(Integer.parseInt(args[1])).orElseThrow();
            System.out.println("maps " + t.maps().stream().map(Mapping::path).filter(ProcPaths::nvidiaDevice).toList()
                    + " unreadable " + t.unreadable());
        }
    }
}

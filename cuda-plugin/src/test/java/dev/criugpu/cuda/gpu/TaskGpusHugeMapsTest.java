package dev.criugpu.cuda.gpu;

import dev.criugpu.api.sys.HugeMaps;
import dev.criugpu.api.sys.SmallHeapJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A task's GPUs found at the end of a 200 MB /proc/PID/maps, in a JVM with criu's heap (64 MiB). */
class TaskGpusHugeMapsTest {
    static final String RANGE = "7f2000200000-7f2000400000";

    @Test
    void theGpuMappedAfter200MbOfMappingsIsFoundIn64MiB(@TempDir Path dir) throws Exception {
        Path task = Files.createDirectories(dir.resolve("proc/4242"));
        Files.createDirectories(task.resolve("map_files"));
        HugeMaps.write(task.resolve("maps"), RANGE + " rw-s 00000000 00:05 1025 /dev/nvidia3\n");
        // a link that cannot be followed (a loop here, EACCES for a user) leaves the decision to the name
        Files.createSymbolicLink(task.resolve("map_files/" + RANGE), Path.of(RANGE));
        SmallHeapJvm child = SmallHeapJvm.run(Reader.class, dir.resolve("proc").toString(), "4242");
        assertEquals(0, child.exitCode(), child.output());
        assertEquals("minors [3]", child.output().strip().lines().toList().getLast());
    }

    /** The child: the GPUs of a task of a /proc tree, among present GPUs of minors 0 to 7. */
    public static final class Reader {
        public static void main(String[] args) throws Exception {
            List<GpuInfo> present = new ArrayList<>();
            for (int m = 0; m < 8; m++) present.add(new GpuInfo(null, m, "H100", "0000:0" + m + ":00.0"));
            List<GpuInfo> found = TaskGpus.of(Path.of(args[0]), Integer.parseInt(args[1]), present);
            System.out.println("minors " + found.stream().map(GpuInfo::minor).toList());
        }
    }
}

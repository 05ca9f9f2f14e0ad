package dev.criugpu.cuda.job;

import dev.criugpu.api.sys.HugeMaps;
import dev.criugpu.api.sys.SmallHeapJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** libnccl found mapped at the end of a 200 MB /proc/PID/maps, in a JVM with criu's heap (64 MiB). */
class NcclRankHugeMapsTest {
    @Test
    void libncclMappedAfter200MbOfMappingsIsSeenIn64MiB(@TempDir Path dir) throws Exception {
        Path task = Files.createDirectories(dir.resolve("proc/4242"));
        HugeMaps.write(task.resolve("maps"),
                "7f1000000000-7f1000200000 r-xp 00000000 08:01 200 /usr/lib/x86_64-linux-gnu/libnccl.so.2\n");
        SmallHeapJvm child = SmallHeapJvm.run(Reader.class, dir.resolve("proc").toString(), "4242");
        assertEquals(0, child.exitCode(), child.output());
        assertEquals("nccl true torch false", child.output().strip().lines().toList().getLast());
    }

    /** The child: what maps says of a task of a /proc tree. */
    public static final class Reader {
        public static void main(String[] args) {
            NcclTransports.Rank r = NcclTransports.Rank.read(Path.of(args[0]), Integer.parseInt(args[1]));
            System.out.println("nccl " + r.ncclMapped() + " torch " + r.torchMapped());
        }
    }
}

package dev.criugpu.it;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A restore started right after the dump, on the same host, of a task whose listening port holds a TIME_WAIT entry of
 * a connection the listener's own side closed (as an NCCL rank's after its start-up; measured on 2 x H100, issue
 * 32): criu's bind of the restored listener fails with "Address already in use" until that entry expires, 60 s after
 * the close, although criu sets SO_REUSEADDR and SO_REUSEPORT. The CUDA plugin's restore init (in the restore probe,
 * before criu forks) removes such entries on the image's listen ports. Real criu 4.2.1, forced mode, the fake
 * cuda-checkpoint ({@link FakeCuda}).
 */
@ExtendWith(DockerRequired.class)
class RestoreRightAfterDumpIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1);

    private final List<Runnable> cleanup = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        cleanup.forEach(Runnable::run);
        cleanup.clear();
    }

    /** TIME_WAIT (state 06) entries of the container's /proc/net/tcp on {@code port}. */
    private static long timeWaitOn(CriuContainer criu, int port) {
        String hex = String.format(":%04X", port);
        return criu.exec("cat", "/proc/net/tcp").orFail().stdout().lines()
                .map(l -> l.trim().split("\\s+")).filter(f -> f.length > 3 && f[1].endsWith(hex) && f[3].equals("06"))
                .count();
    }

    @Test
    void aListenerWhosePortHoldsATimeWaitEntryIsRestoredRightAfterTheDump(CriuContainer criu) {
        String dir = "/tmp/right-after";
        FakeCuda.Running t = FakeCuda.startCudaTask(criu, dir, CounterWorkload::startListening, cleanup);
        FakeCuda cuda = t.cuda();
        CounterWorkload counter = t.counter();
        int pid = t.pid();
        int port = Integer.parseInt(criu.exec("cat", dir + "/counter.port").orFail().stdout().strip());
        assertEquals(1, timeWaitOn(criu, port), "the workload's listener port holds a TIME_WAIT entry");

        cuda.env(CriuCommand.dump(pid, dir + "/img").withPlugins().forced()).runIn(criu).orFail();
        List<Long> atDump = counter.awaitDumped();
        assertEquals(1, timeWaitOn(criu, port), "the entry outlives the dump (60 s from the close)");

        CriuRun restore = cuda.env(CriuCommand.restore(dir + "/img").withPlugins().forced()).runIn(criu);
        assertEquals(0, restore.result().exitCode(), restore.result().describe() + "\n" + restore.logTail(40));
        counter.assertContinuedFrom(atDump);
        assertEquals(0, timeWaitOn(criu, port));
        List<String> removed = restore.logLinesContaining("port " + port + ": removed 1 TIME_WAIT connection(s)");
        assertFalse(removed.isEmpty(), restore.logTail(40));
        // once, in the restore probe: the init criu runs after it (by then the restored task listens there itself)
        // does not look at the port again
        List<String> looked = restore.logLinesContaining("port " + port + ": ").stream()
                .filter(l -> l.contains("cuda_plugin")).toList();
        assertEquals(1, looked.size(), String.join("\n", looked));
        assertTrue(restore.logLinesContaining("Can't bind").isEmpty(), restore.logTail(40));
    }
}

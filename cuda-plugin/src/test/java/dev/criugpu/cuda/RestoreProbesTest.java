package dev.criugpu.cuda;

import dev.criugpu.cuda.config.PluginConfig;
import dev.criugpu.cuda.image.CudaTaskEntry;
import dev.criugpu.cuda.image.CudaTaskImages;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.inventory.ImageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The images a restore's init needs, read while the JVM still starts: the same answers as reading them in init. */
class RestoreProbesTest {
    private static final PluginConfig CONFIG = PluginConfig.load(Map.of(), null);

    private static void record(Path dir, int pid) throws ImageException {
        CudaTaskImages.write(dir, CudaTaskEntry.newBuilder().setPid(pid).setInitialState(CudaState.RUNNING.value)
                .setBackend("driver").build());
    }

    @Test
    void theRecordsReadInTheBackgroundAreThoseInitWouldRead(@TempDir Path dir) throws Exception {
        record(dir, 42);
        record(dir, 7);
        RestoreProbes probes = RestoreProbes.start(CONFIG, Optional.of(dir));
        RestoreImages early = probes.images(dir);
        probes.settle();
        RestoreImages now = RestoreImages.read(dir);
        assertEquals(now.records(), early.records());
        // sorted by file name, as init reads them
        assertEquals(List.of(42, 7), early.records().stream().map(CudaTaskEntry::getPid).toList());
        assertEquals(now.inherited(), early.inherited());
        assertEquals(now.resumedError().getMessage(), early.resumedError().getMessage(), "no pstree.img in either");
    }

    @Test
    void aBrokenRecordFailsInitWithTheLineReadingItWouldGive(@TempDir Path dir) throws Exception {
        Files.write(CudaTaskImages.file(dir, 9), new byte[] {1, 2, 3});
        RestoreProbes probes = RestoreProbes.start(CONFIG, Optional.of(dir));
        ImageException early = assertThrows(ImageException.class, () -> probes.images(dir));
        ImageException now = assertThrows(ImageException.class, () -> RestoreImages.read(dir));
        assertEquals(now.getMessage(), early.getMessage());
        assertTrue(early.getMessage().startsWith(CudaTaskImages.file(dir, 9).toString()), early.getMessage());
        probes.settle();
    }

    @Test
    void imagesOfAnotherDirectoryOrNoneAreNotTaken(@TempDir Path dir, @TempDir Path other) throws Exception {
        record(dir, 42);
        RestoreProbes probes = RestoreProbes.start(CONFIG, Optional.of(other));
        assertNull(probes.images(dir), "read from another directory: init reads its own");
        RestoreProbes none = RestoreProbes.start(CONFIG, Optional.empty());
        assertNull(none.images(dir));
        probes.settle();
        none.settle();
    }
}

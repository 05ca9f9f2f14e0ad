package dev.criugpu.it;

import dev.criugpu.inventory.InventoryPlugins;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * Issue 22: a FIFO named like an AMD image in the images directory. The AMD plugin's restore reads its KFD images in
 * init; a reader that opened the FIFO blocking would hold criu there until someone wrote to it (and Ctrl-C could not
 * end it: the shim blocks SIGINT during hooks). It is refused at once with one line naming the file, and criu fails.
 * The container's KFD topology is {@link FakeKfdTopology}'s, so the plugin gets as far as
 * reading the images.
 */
@ExtendWith(DockerRequired.class)
class AmdgpuFifoImageIT {
    @RegisterExtension
    static final SharedCriuContainer shared = SharedCriuContainer.withPlugins(CriuImage.CRIU_4_2_1)
            .thenRun(criu -> criu.sh(FakeKfdTopology.mountInContainer()).orFail());

    @Test
    void aFifoNamedLikeAKfdImageIsRefusedAtOnceWithOneLine(CriuContainer criu, @TempDir Path host) throws Exception {
        CounterWorkload task = CounterWorkload.startSingle(criu, "/tmp/fifo");
        CriuCommand.dump(task.rootPid(), "/tmp/fifo.img").withPlugins().forced().runIn(criu).orFail();
        String inventory = "/tmp/fifo.img/" + InventoryPlugins.INVENTORY_IMG;
        criu.copyOut(inventory, host.resolve(InventoryPlugins.INVENTORY_IMG));
        InventoryPlugins.setPlugins(host, List.of("amdgpu_plugin"));
        criu.copyIn(host.resolve(InventoryPlugins.INVENTORY_IMG), inventory);
        criu.sh("mkfifo /tmp/fifo.img/amdgpu-kfd-1.img").orFail();

        CriuInBackground restore = CriuInBackground.start(criu,
                CriuCommand.restore("/tmp/fifo.img").withPlugins().forced(), "/tmp/fifo-restore");
        try {
            long t0 = System.nanoTime();
            // a bound against a hang only: before the fix criu never got past reading the FIFO
            int status = restore.awaitEnd(Duration.ofSeconds(60));
            System.err.printf("AmdgpuFifoImageIT: criu restore ended %d ms after it was seen started%n",
                    (System.nanoTime() - t0) / 1_000_000);
            CriuRun run = restore.run();
            assertNotEquals(0, status, run.logTail(30));
            assertEquals(1, run.logLinesContaining("amdgpu-kfd-1.img: is a FIFO, not a regular file; refused").size(),
                    run.logTail(30));
            assertEquals(List.of(), run.logLinesContaining("amdgpu-kfd-1.img").stream()
                    .filter(l -> !l.contains("is a FIFO, not a regular file; refused")).toList(), "one line names it");
        } finally {
            restore.kill();
        }
    }
}

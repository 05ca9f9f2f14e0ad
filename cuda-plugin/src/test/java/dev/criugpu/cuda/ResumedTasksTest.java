package dev.criugpu.cuda;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.Stage;
import dev.criugpu.api.log.CriuLog;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Without a readable pstree.img a restore cannot tell which tasks have no record of ours: an image that lists
 * cuda_plugin may hold CUDA state in exactly those (upstream's plugin writes none), so the restore is refused at
 * init; an image from before the inventory's plugins field only gets a warning.
 */
class ResumedTasksTest {
    @TempDir
    Path images;
    TestServices services;

    @BeforeEach
    void setUp() throws Exception {
        services = new TestServices(Stage.RESTORE, images, InventoryClaim.LISTED);
        CriuLog.register("dev.criugpu.cuda", services);
        Files.write(images.resolve("pstree.img"), new byte[] {0x19, 0x43, 0x56, 0x54, 0x30}); // cut inside the magic
    }

    @Test
    void anUnreadableTaskListFailsARestoreThatNeedsThePluginNamingTheFile() throws Exception {
        CriuException e = assertThrows(CriuException.class, () -> RestoreStart.resumedTasks(RestoreImages.read(images), InventoryClaim.LISTED));
        assertTrue(e.getMessage().startsWith(images.resolve("pstree.img") + ": "), e.getMessage());
        assertTrue(e.getMessage().endsWith("cannot be restored: nothing was restored"), e.getMessage());
        assertEquals(1, e.getMessage().lines().count());
    }

    @Test
    void anImageFromBeforeThePluginsFieldOnlyWarns() throws Exception {
        assertNull(RestoreStart.resumedTasks(RestoreImages.read(images), InventoryClaim.LEGACY));
        List<String> warnings = services.log.stream().filter(l -> l.startsWith("WARN")).toList();
        assertEquals(1, warnings.size(), services.log.toString());
        assertTrue(warnings.getFirst().contains(images.resolve("pstree.img") + ": "), warnings.getFirst());
    }
}

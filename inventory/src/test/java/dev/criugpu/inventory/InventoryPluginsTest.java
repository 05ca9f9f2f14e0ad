package dev.criugpu.inventory;

import dev.criugpu.api.CriuServices;
import dev.criugpu.api.InventoryClaim;
import dev.criugpu.api.LogLevel;
import dev.criugpu.api.Stage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class InventoryPluginsTest {

    @Test
    void realDumpWithoutGpuListsNoPlugins() throws Exception {
        Path tree = Fixtures.dir("tree");
        assertEquals(Optional.of(List.of()), InventoryPlugins.listed(tree));
        assertEquals(List.of(), InventoryPlugins.required(tree));
        assertEquals(InventoryClaim.NOT_LISTED, InventoryPlugins.claimFor(tree, "cuda_plugin"));
    }

    @Test
    void listedPlugins() throws Exception {
        Path dir = Fixtures.dir("written-plugins");
        assertEquals(List.of("cuda_plugin", "amdgpu_plugin"), InventoryPlugins.required(dir));
        assertEquals(InventoryClaim.LISTED, InventoryPlugins.claimFor(dir, "cuda_plugin"));
        assertEquals(InventoryClaim.LISTED, InventoryPlugins.claimFor(dir, "amdgpu_plugin"));
        assertEquals(InventoryClaim.NOT_LISTED, InventoryPlugins.claimFor(dir, "other_plugin"));
    }

    @Test
    void legacyImageEnablesEverything() throws Exception {
        Path dir = Fixtures.dir("written-legacy");
        assertEquals(Optional.empty(), InventoryPlugins.listed(dir));
        assertEquals(List.of(), InventoryPlugins.required(dir));
        assertEquals(InventoryClaim.LEGACY, InventoryPlugins.claimFor(dir, "cuda_plugin"));
    }

    @Test
    void setAndClearRoundTrip(@TempDir Path tmp) throws Exception {
        Path dir = Fixtures.copy("tree", tmp);
        InventoryPlugins.setPlugins(dir, List.of("amdgpu_plugin"));
        assertEquals(InventoryClaim.LISTED, InventoryPlugins.claimFor(dir, "amdgpu_plugin"));
        assertEquals(InventoryClaim.NOT_LISTED, InventoryPlugins.claimFor(dir, "cuda_plugin"));
        InventoryPlugins.clearPlugins(dir);
        assertEquals(InventoryClaim.LEGACY, InventoryPlugins.claimFor(dir, "cuda_plugin"));
        assertArrayEquals(Files.readAllBytes(Fixtures.dir("written-legacy").resolve("inventory.img")),
                Files.readAllBytes(dir.resolve("inventory.img")));
    }

    @Test
    void markHoldsStateAsksCriuOncePerPlugin() {
        RecordingServices cuda = new RecordingServices("cuda_plugin", true);
        RecordingServices amd = new RecordingServices("amdgpu_plugin", true);
        assertTrue(InventoryPlugins.markHoldsState(cuda));
        assertTrue(InventoryPlugins.markHoldsState(cuda));
        assertTrue(InventoryPlugins.markHoldsState(amd));
        assertEquals(1, cuda.addCalls);
        assertEquals(1, amd.addCalls);
        assertEquals(1, cuda.lines.size(), "one log line, not one per call");
    }

    @Test
    void markHoldsStateReportsAnOldCriu() {
        RecordingServices old = new RecordingServices("cuda_plugin", false);
        assertFalse(InventoryPlugins.markHoldsState(old));
        assertFalse(InventoryPlugins.markHoldsState(old));
        assertEquals(1, old.addCalls);
        assertTrue(old.lines.getFirst().startsWith("WARN"), old.lines.toString());
    }

    /** criu's side of the seam: answers add_inventory_plugin and keeps the log lines. */
    private static final class RecordingServices implements CriuServices {
        final String name;
        final boolean criuHasFunction;
        int addCalls;
        final List<String> lines = new ArrayList<>();

        RecordingServices(String name, boolean criuHasFunction) {
            this.name = name;
            this.criuHasFunction = criuHasFunction;
        }

        @Override public String pluginName() { return name; }
        @Override public Stage stage() { return Stage.DUMP; }
        @Override public boolean forced() { return false; }
        @Override public int criuHookCount() { return 13; }
        @Override public Path pluginDir() { return Path.of("/usr/lib/criu"); }
        @Override public boolean isLoggable(LogLevel level) { return true; }
        @Override public void log(LogLevel level, String message) { lines.add(level + " " + message); }
        @Override public Optional<Integer> imageDirFd() { return Optional.empty(); }
        @Override public Optional<Path> imageDir() { return Optional.empty(); }
        @Override public boolean addInventoryPlugin() { addCalls++; return criuHasFunction; }
        @Override public InventoryClaim inventoryClaim() { return InventoryClaim.NONE; }
        @Override public boolean setCompelInterruptOnlyMode() { return false; }
    }
}

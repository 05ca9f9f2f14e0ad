package dev.criugpu.inventory.inspect;

import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.ImageIO;
import dev.criugpu.inventory.ImageMagic;
import dev.criugpu.inventory.InventoryPlugins;
import dev.criugpu.inventory.images.CoreEntry;
import dev.criugpu.inventory.images.InventoryEntry;
import dev.criugpu.inventory.images.PstreeEntry;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** What an images directory holds, as far as inspection reports it. Loading it validates the images it reads. */
public record Checkpoint(Path dir, InventoryEntry inventory, List<Process> processes, List<GpuImages.Group> gpu) {

    /** One task of pstree.img, with its command from core-&lt;pid&gt;.img when that file exists. */
    public record Process(int pid, int ppid, int pgid, int sid, List<Integer> threads, Optional<String> command) {
    }

    /**
     * Reads inventory.img, pstree.img and each task's core image of {@code dir}.
     *
     * @throws ImageException naming the directory when it is not a checkpoint, or the file that is damaged
     */
    public static Checkpoint load(Path dir) throws ImageException {
        if (!Files.isDirectory(dir)) {
            throw new ImageException(dir, Files.exists(dir) ? "not a directory" : "no such directory");
        }
        if (!Files.exists(dir.resolve(InventoryPlugins.INVENTORY_IMG))) {
            throw new ImageException(dir, "not a criu checkpoint (no inventory.img)");
        }
        InventoryEntry inventory = InventoryPlugins.read(dir);
        Path pstree = dir.resolve("pstree.img");
        if (!Files.exists(pstree)) throw new ImageException(dir, "incomplete checkpoint (no pstree.img)");
        List<Process> processes = new ArrayList<>();
        for (PstreeEntry e : ImageIO.readEntries(pstree, ImageIO.PSTREE_MAGIC, PstreeEntry.parser())) {
            processes.add(new Process(e.getPid(), e.getPpid(), e.getPgid(), e.getSid(),
                    List.copyOf(e.getThreadsList()), command(dir, e.getPid())));
        }
        return new Checkpoint(dir, inventory, List.copyOf(processes), GpuImages.scan(dir, inventory));
    }

    private static Optional<String> command(Path dir, int pid) throws ImageException {
        Path core = dir.resolve("core-" + pid + ".img");
        if (!Files.exists(core)) return Optional.empty();
        List<CoreEntry> entries = ImageIO.readEntries(core, ImageMagic.CORE, CoreEntry.parser());
        if (entries.isEmpty()) throw new ImageException(core, "no core entry");
        CoreEntry first = entries.getFirst();
        return first.hasTc() ? Optional.of(first.getTc().getComm()) : Optional.empty();
    }

    /** The plugins a restore requires, or empty when the image does not record them (older criu). */
    public Optional<List<String>> requiredPlugins() {
        return inventory.hasPluginsEntry() ? Optional.of(inventory.getPluginsEntry().getPluginsList())
                : Optional.empty();
    }

    /**
     * The oldest criu release that writes every inventory field present, as far as the image tells; criu does
     * not record its version in images.
     */
    public String writerHint() {
        // Fields and the criu pull requests that added them: allow_uprobes #2717 (2025-08, after 4.1),
        // plugins_entry #2489 and dump_criu_run_id #2550 (2024-09/12, after 4.0); compress is written by 4.3 (Debian's
        // 4.3-1~exp2 writes it on every dump).
        if (inventory.hasCompress()) return "criu 4.3 or newer (records compress)";
        if (inventory.hasAllowUprobes()) return "criu 4.2 or newer (records allow_uprobes)";
        if (inventory.hasPluginsEntry()) return "criu 4.1 or newer (records inventory plugins)";
        if (inventory.hasDumpCriuRunId()) return "criu 4.1 or newer (records a run id)";
        return "criu older than 4.1 (no plugins list recorded)";
    }

    static long size(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            return -1;
        }
    }
}

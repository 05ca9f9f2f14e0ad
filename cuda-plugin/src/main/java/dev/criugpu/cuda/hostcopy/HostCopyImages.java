package dev.criugpu.cuda.hostcopy;

import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.cuda.hostcopy.TaskSpans.Span;
import dev.criugpu.cuda.image.CudaHostCopyEntry;
import dev.criugpu.cuda.image.CudaHostCopyRange;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.ImageIO;
import dev.criugpu.inventory.ImageMagic;
import dev.criugpu.inventory.InventoryPlugins;
import dev.criugpu.inventory.Pagemap;
import dev.criugpu.inventory.RawPages;
import dev.criugpu.inventory.images.InventoryEntry;
import dev.criugpu.inventory.images.MmEntry;
import dev.criugpu.inventory.images.VmaEntry;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The plugin's image format for the driver's host copy (issue 54): criu writes a task's memory, host copy included,
 * into its pages file, and its restorer reads it back one 4 KiB page fault after the other (1.6 GiB/s). After a dump,
 * {@link #move} takes the host copy's runs out of criu's pagemap: criu's pagemap then names a new pages file with the
 * rest of the task's memory, the host copy's bytes stay where criu wrote them, and {@code cuda-hostcopy-<pid>.img}
 * says where they go; {@link HostCopyFill} puts them back at restore, with many threads into huge pages (the VMAs
 * get MADV_HUGEPAGE in mm-&lt;pid&gt;.img). The inventory then requires {@link #MARKER}, a plugin name only this
 * plugin claims: criu without it (upstream's plugin, an older one of ours, no plugin) refuses the restore
 * ("Missing required plugin") instead of restoring the host copy as zeros.
 *
 * <p>Order of the writes, so that every state between them restores right or is refused: the new pages file and the
 * record, then the inventory's marker, then mm-&lt;pid&gt;.img, and last the pagemap, whose rename is the switch.
 */
public final class HostCopyImages {
    public static final String MARKER = InventoryPlugins.HOST_COPY_FORMAT;
    /** Image magic of the records ("HCPY"). */
    public static final int MAGIC = 0x48435059;
    /** Below this a task's host copy stays in criu's pages: the copy of the rest would cost more than it saves. */
    public static final long MIN_BYTES = 64L << 20;
    private static final Pattern NAME = Pattern.compile("cuda-hostcopy-([0-9]+)\\.img");
    private static final Pattern PAGES = Pattern.compile("pages-([0-9]+)\\.img");
    private static final int MADV_HUGEPAGE = 14, MADV_NOHUGEPAGE = 15;
    private static final int MAP_PRIVATE = 0x02, MAP_ANONYMOUS = 0x20, MAP_HUGETLB = 0x40000;

    private HostCopyImages() {
    }

    public static Path file(Path imageDir, int pid) {
        return imageDir.resolve("cuda-hostcopy-" + Integer.toUnsignedString(pid) + ".img");
    }

    /**
     * Moves the runs of task {@code pid}'s pagemap inside {@code spans} out of criu's pages, as described above.
     *
     * @return the bytes moved; 0 where the task's pages are left as criu wrote them (fewer than {@link #MIN_BYTES})
     * @throws ImageException (one line, naming the file) where the images are not a plain local dump this can change
     *     (lazy or parent pages, a pages file of another size, an inventory without the plugins field); nothing is
     *     changed then
     */
    public static long move(Path dir, int pid, List<Span> spans) throws ImageException {
        return move(dir, pid, spans, MIN_BYTES);
    }

    static long move(Path dir, int pid, List<Span> spans, long minBytes) throws ImageException {
        Path pagemapFile = Pagemap.file(dir, pid);
        Pagemap pagemap = Pagemap.read(pagemapFile);
        Path pagesFile = Pagemap.pagesFile(dir, pagemap.pagesId());
        for (Pagemap.Run r : pagemap.runs()) {
            // criu marks a private anonymous run PE_LAZY | PE_PRESENT in every dump; only lazy pages left out of the
            // file (--lazy-pages) or pages of a parent image (pre-dumps) are not here
            if (!r.inFile() || (r.flags() & Pagemap.PE_PARENT) != 0) {
                throw new ImageException(pagemapFile, "has pages that are not in its pages file (flags " + r.flags()
                        + ": lazy or in a parent image)");
            }
        }
        Path inventoryFile = dir.resolve(InventoryPlugins.INVENTORY_IMG);
        InventoryEntry inventory = InventoryPlugins.read(dir);
        if (!inventory.hasPluginsEntry()) {
            throw new ImageException(inventoryFile, "has no plugins field (criu older than 4.1), so a restore without "
                    + "this plugin could not be refused");
        }
        Split split = split(pagemap, spans);
        if (split.movedBytes() < minBytes || split.movedBytes() == 0) return 0;
        int newId = unusedPagesId(dir);
        try (RawPages.Reader from = RawPages.open(pagesFile)) {
            if (from.size() != pagemap.bytesInFile()) {
                throw new ImageException(pagesFile, "holds " + from.size() + " bytes where " + pagemapFile.getFileName()
                        + " names " + pagemap.bytesInFile());
            }
            try (RawPages.Writer to = RawPages.create(Pagemap.pagesFile(dir, newId))) {
                for (long[] part : split.keptParts()) to.copyFrom(from, part[0], part[1]);
                to.commit();
            }
        }
        CudaHostCopyEntry.Builder record = CudaHostCopyEntry.newBuilder().setPid(pid).setPagesId(pagemap.pagesId());
        record.addAllRanges(split.moved());
        ImageIO.writeEntries(file(dir, pid), MAGIC, List.of(record.build()));
        if (!inventory.getPluginsEntry().getPluginsList().contains(MARKER)) {
            ImageIO.writeEntries(inventoryFile, ImageIO.INVENTORY_MAGIC, List.of(inventory.toBuilder()
                    .setPluginsEntry(inventory.getPluginsEntry().toBuilder().addPlugins(MARKER)).build()));
        }
        adviseHugePages(dir.resolve("mm-" + Integer.toUnsignedString(pid) + ".img"), spans);
        new Pagemap(newId, split.kept()).write(pagemapFile);
        return split.movedBytes();
    }

    /** The pagemap's runs cut at the spans' edges: those inside go to the record, the rest stay with criu. */
    record Split(List<Pagemap.Run> kept, List<long[]> keptParts, List<CudaHostCopyRange> moved, long movedBytes) {
    }

    static Split split(Pagemap pagemap, List<Span> spans) {
        List<Pagemap.Run> kept = new ArrayList<>();
        List<long[]> keptParts = new ArrayList<>();
        List<CudaHostCopyRange> moved = new ArrayList<>();
        long offset = 0, movedBytes = 0;
        for (Pagemap.Run run : pagemap.runs()) {
            long at = run.vaddr();
            while (at < run.end()) {
                Span inside = covering(spans, at);
                long end;
                if (inside != null) {
                    end = Math.min(run.end(), inside.end());
                    moved.add(CudaHostCopyRange.newBuilder().setVaddr(at).setLength(end - at).setOffset(offset).build());
                    movedBytes += end - at;
                } else {
                    end = Math.min(run.end(), nextStart(spans, at));
                    kept.add(new Pagemap.Run(at, (end - at) / Pagemap.PAGE, run.flags()));
                    if (!keptParts.isEmpty() && keptParts.getLast()[0] + keptParts.getLast()[1] == offset) {
                        keptParts.getLast()[1] += end - at;
                    } else {
                        keptParts.add(new long[] {offset, end - at});
                    }
                }
                offset += end - at;
                at = end;
            }
        }
        return new Split(kept, keptParts, moved, movedBytes);
    }

    private static Span covering(List<Span> spans, long at) {
        for (Span s : spans) if (s.start() <= at && at < s.end()) return s;
        return null;
    }

    private static long nextStart(List<Span> spans, long at) {
        long next = Long.MAX_VALUE;
        for (Span s : spans) if (s.start() > at) next = Math.min(next, s.start());
        return next;
    }

    private static int unusedPagesId(Path dir) throws ImageException {
        int max = 0;
        try {
            for (String n : ImageFiles.list(dir)) {
                Matcher m = PAGES.matcher(n);
                if (m.matches()) max = Math.max(max, Integer.parseInt(m.group(1)));
            }
        } catch (IOException | NumberFormatException e) {
            throw new ImageException(dir, "cannot list its pages files: " + e.getMessage());
        }
        return max + 1;
    }

    /** MADV_HUGEPAGE on the private anonymous VMAs that hold a span, unless the task advised against it. */
    private static void adviseHugePages(Path mmFile, List<Span> spans) throws ImageException {
        MmEntry mm = ImageIO.readSingle(mmFile, ImageMagic.MM, MmEntry.parser());
        MmEntry.Builder b = mm.toBuilder();
        boolean changed = false;
        for (int i = 0; i < b.getVmasCount(); i++) {
            VmaEntry v = b.getVmas(i);
            boolean anonymous = (v.getFlags() & (MAP_PRIVATE | MAP_ANONYMOUS)) == (MAP_PRIVATE | MAP_ANONYMOUS)
                    && (v.getFlags() & MAP_HUGETLB) == 0;
            if (!anonymous || (v.getMadv() & (1L << MADV_NOHUGEPAGE)) != 0) continue;
            if (spans.stream().noneMatch(s -> s.start() < v.getEnd() && v.getStart() < s.end())) continue;
            b.setVmas(i, v.toBuilder().setMadv(v.getMadv() | (1L << MADV_HUGEPAGE)));
            changed = true;
        }
        if (changed) ImageIO.writeEntries(mmFile, ImageMagic.MM, List.of(b.build()));
    }

    /** The records in {@code dir} (an earlier dump's must go before this one writes its own). */
    public static List<Path> files(Path dir) {
        try {
            return ImageFiles.list(dir).stream().filter(n -> NAME.matcher(n).matches()).map(dir::resolve).sorted().toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    /** Every record in {@code dir}, by the task's namespace pid, each checked against its name. */
    public static java.util.Map<Integer, CudaHostCopyEntry> readAll(Path dir) throws ImageException {
        java.util.Map<Integer, CudaHostCopyEntry> out = new java.util.TreeMap<>();
        List<String> names;
        try {
            names = ImageFiles.list(dir);
        } catch (IOException e) {
            return out;
        }
        for (String n : names) {
            Matcher m = NAME.matcher(n);
            if (!m.matches()) continue;
            Path f = dir.resolve(n);
            CudaHostCopyEntry e = ImageIO.readSingle(f, MAGIC, CudaHostCopyEntry.parser());
            if (!m.group(1).equals(Integer.toUnsignedString(e.getPid())) || e.getPid() == 0) {
                throw new ImageException(f, "holds pid " + Integer.toUnsignedString(e.getPid()) + ", which its name does not say");
            }
            for (CudaHostCopyRange r : e.getRangesList()) {
                if (r.getLength() <= 0 || r.getLength() % Pagemap.PAGE != 0 || r.getVaddr() % Pagemap.PAGE != 0
                        || r.getOffset() < 0 || r.getOffset() + r.getLength() < 0 || r.getVaddr() + r.getLength() < r.getVaddr()) {
                    throw new ImageException(f, "holds a range that is not whole pages: " + r.getLength() + " bytes at 0x"
                            + Long.toHexString(r.getVaddr()));
                }
            }
            out.put(e.getPid(), e);
        }
        return out;
    }

    /** Whether {@code dir} is in this format: its inventory requires {@link #MARKER}. */
    public static Optional<Boolean> marked(Path dir) {
        try {
            return Optional.of(InventoryPlugins.required(dir).contains(MARKER));
        } catch (ImageException e) {
            return Optional.empty();
        }
    }
}

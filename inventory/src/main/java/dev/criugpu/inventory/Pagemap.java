package dev.criugpu.inventory;

import dev.criugpu.inventory.images.PagemapEntry;
import dev.criugpu.inventory.images.PagemapHead;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A task's pagemap-&lt;pid&gt;.img: which runs of its private memory criu saved, in address order, and the raw file
 * (pages-&lt;pagesId&gt;.img) that holds their bytes one run after the other. A run's bytes begin where the previous
 * run's present bytes end: the file has no offsets of its own.
 */
public record Pagemap(int pagesId, List<Run> runs) {
    public static final long PAGE = 4096;
    /** Flags of a run (criu/include/pagemap.h): its pages are in a parent image, may be restored lazily, are in the file. */
    public static final int PE_PARENT = 1, PE_LAZY = 2, PE_PRESENT = 4;

    /** {@code pages} pages from {@code vaddr}. */
    public record Run(long vaddr, long pages, int flags) {
        public long end() {
            return vaddr + pages * PAGE;
        }

        public boolean inFile() {
            return (flags & PE_PRESENT) != 0;
        }
    }

    public Pagemap {
        runs = List.copyOf(runs);
    }

    public static Path file(Path imageDir, int pid) {
        return imageDir.resolve("pagemap-" + Integer.toUnsignedString(pid) + ".img");
    }

    public static Path pagesFile(Path imageDir, int pagesId) {
        return imageDir.resolve("pages-" + Integer.toUnsignedString(pagesId) + ".img");
    }

    public static Pagemap read(Path file) throws ImageException {
        try (ImageReader r = ImageReader.open(file, ImageMagic.PAGEMAP)) {
            PagemapHead head = r.next(PagemapHead.parser());
            if (head == null) throw new ImageException(file, "has no pagemap head");
            List<Run> runs = new ArrayList<>();
            for (PagemapEntry e; (e = r.next(PagemapEntry.parser())) != null; ) {
                // criu's reading of older images: in_parent alone means PE_PARENT, no flags means PE_PRESENT
                int flags = e.hasInParent() && e.getInParent() ? PE_PARENT : e.hasFlags() ? e.getFlags() : PE_PRESENT;
                long pages = e.hasNrPages() ? e.getNrPages() : Integer.toUnsignedLong(e.getCompatNrPages());
                runs.add(new Run(e.getVaddr(), pages, flags));
            }
            return new Pagemap(head.getPagesId(), runs);
        }
    }

    /** Writes this pagemap at {@code file}, atomically (the file is either the old one or this one). */
    public void write(Path file) throws ImageException {
        try (ImageWriter w = ImageWriter.create(file, ImageMagic.PAGEMAP)) {
            w.write(PagemapHead.newBuilder().setPagesId(pagesId).build());
            for (Run run : runs) {
                w.write(PagemapEntry.newBuilder().setVaddr(run.vaddr()).setCompatNrPages((int) run.pages())
                        .setNrPages(run.pages()).setFlags(run.flags()).build());
            }
            w.commit();
        }
    }

    /** The bytes of every run in the pages file. */
    public long bytesInFile() {
        long n = 0;
        for (Run r : runs) if (r.inFile()) n += r.pages() * PAGE;
        return n;
    }
}

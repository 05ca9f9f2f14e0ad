package dev.criugpu.cuda.hostcopy;

import com.google.protobuf.UnknownFieldSet;
import dev.criugpu.cuda.hostcopy.TaskSpans.Span;
import dev.criugpu.cuda.image.CudaHostCopyEntry;
import dev.criugpu.cuda.image.CudaHostCopyRange;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.ImageIO;
import dev.criugpu.inventory.ImageMagic;
import dev.criugpu.inventory.InventoryPlugins;
import dev.criugpu.inventory.Pagemap;
import dev.criugpu.inventory.images.InventoryEntry;
import dev.criugpu.inventory.images.MmEntry;
import dev.criugpu.inventory.images.PluginsEntry;
import dev.criugpu.inventory.images.VmaEntry;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The dump's side of the host copy format on images laid out as criu writes them. */
class HostCopyImagesTest {
    static final long P = Pagemap.PAGE;
    static final int PID = 7;
    @TempDir
    Path dir;
    byte[] pages;

    /** Runs (flags as criu 4.2 writes them): 4 pages at 0x10000, 8 at 0x100000 (the host copy: 0x102000..0x108000), 2 at 0x200000. */
    @BeforeEach
    void criuDump() throws Exception {
        writeInventory(List.of("cuda_plugin"));
        new Pagemap(1, List.of(new Pagemap.Run(0x10000, 4, Pagemap.PE_PRESENT), new Pagemap.Run(0x100000, 8, Pagemap.PE_PRESENT | Pagemap.PE_LAZY),
                new Pagemap.Run(0x200000, 2, Pagemap.PE_PRESENT))).write(Pagemap.file(dir, PID));
        pages = new byte[(int) (14 * P)];
        for (int i = 0; i < pages.length; i++) pages[i] = (byte) (i / P * 7 + i);
        Files.write(Pagemap.pagesFile(dir, 1), pages);
        UnknownFieldSet startCode = UnknownFieldSet.newBuilder()
                .addField(1, UnknownFieldSet.Field.newBuilder().addVarint(0x400000).build()).build();
        MmEntry mm = MmEntry.newBuilder().setUnknownFields(startCode)
                .addVmas(vma(0x10000, 0x14000, 0x22))
                .addVmas(vma(0x100000, 0x108000, 0x22))
                .addVmas(vma(0x200000, 0x202000, 0x02)).build();   // a file's private mapping
        ImageIO.writeEntries(dir.resolve("mm-7.img"), ImageMagic.MM, List.of(mm));
    }

    private static VmaEntry vma(long start, long end, int flags) {
        return VmaEntry.newBuilder().setStart(start).setEnd(end).setPgoff(0).setShmid(0).setProt(3).setFlags(flags)
                .setStatus(1).setFd(-1).build();
    }

    private void writeInventory(List<String> plugins) throws ImageException {
        InventoryEntry.Builder inv = InventoryEntry.newBuilder().setImgVersion(2);
        if (plugins != null) inv.setPluginsEntry(PluginsEntry.newBuilder().addAllPlugins(plugins));
        ImageIO.writeEntries(dir.resolve("inventory.img"), ImageIO.INVENTORY_MAGIC, List.of(inv.build()));
    }

    private byte[] slice(long offset, long length) {
        return Arrays.copyOfRange(pages, (int) offset, (int) (offset + length));
    }

    @Test
    void hostCopyLeavesCriusPagesAndTheRestRestoresAsBefore() throws Exception {
        long moved = HostCopyImages.move(dir, PID, List.of(new Span(0x102000, 0x108000), new Span(0x300000, 0x400000)), 1);
        assertEquals(6 * P, moved);

        Pagemap pm = Pagemap.read(Pagemap.file(dir, PID));
        assertEquals(2, pm.pagesId(), "a new pages file, so that the pagemap's rename is the one switch");
        assertEquals(List.of(new Pagemap.Run(0x10000, 4, Pagemap.PE_PRESENT), new Pagemap.Run(0x100000, 2, Pagemap.PE_PRESENT | Pagemap.PE_LAZY),
                new Pagemap.Run(0x200000, 2, Pagemap.PE_PRESENT)), pm.runs());
        byte[] kept = Files.readAllBytes(Pagemap.pagesFile(dir, 2));
        byte[] expected = new byte[(int) (8 * P)];
        System.arraycopy(pages, 0, expected, 0, (int) (6 * P));
        System.arraycopy(pages, (int) (12 * P), expected, (int) (6 * P), (int) (2 * P));
        assertArrayEquals(expected, kept, "criu reads the other runs from the new file, in order");
        assertArrayEquals(pages, Files.readAllBytes(Pagemap.pagesFile(dir, 1)), "the host copy's bytes stay where criu wrote them");

        Map<Integer, CudaHostCopyEntry> records = HostCopyImages.readAll(dir);
        CudaHostCopyEntry r = records.get(PID);
        assertEquals(1, r.getPagesId());
        assertEquals(List.of(CudaHostCopyRange.newBuilder().setVaddr(0x102000).setLength(6 * P).setOffset(6 * P).build()),
                r.getRangesList());
        assertTrue(InventoryPlugins.required(dir).containsAll(List.of("cuda_plugin", HostCopyImages.MARKER)));
        assertEquals(Boolean.TRUE, HostCopyImages.marked(dir).orElseThrow());

        MmEntry mm = ImageIO.readSingle(dir.resolve("mm-7.img"), ImageMagic.MM, MmEntry.parser());
        assertEquals(0, mm.getVmas(0).getMadv(), "a VMA without host copy keeps its advice");
        assertEquals(1L << 14, mm.getVmas(1).getMadv(), "MADV_HUGEPAGE where the host copy goes");
        assertFalse(mm.getVmas(2).hasMadv());
        assertEquals(0x400000, mm.getUnknownFields().getField(1).getVarintList().getFirst(),
                "criu's fields this schema leaves out are written back");
    }

    @Test
    void aRunCutInThreeKeepsItsOffsets() throws Exception {
        HostCopyImages.move(dir, PID, List.of(new Span(0x101000, 0x103000), new Span(0x105000, 0x106000)), 1);
        CudaHostCopyEntry r = HostCopyImages.readAll(dir).get(PID);
        assertEquals(2, r.getRangesCount());
        assertEquals(5 * P, r.getRanges(0).getOffset());
        assertEquals(9 * P, r.getRanges(1).getOffset());
        assertEquals(List.of(new Pagemap.Run(0x10000, 4, 4), new Pagemap.Run(0x100000, 1, 6), new Pagemap.Run(0x103000, 2, 6),
                new Pagemap.Run(0x106000, 2, 6), new Pagemap.Run(0x200000, 2, 4)), Pagemap.read(Pagemap.file(dir, PID)).runs());
        byte[] kept = Files.readAllBytes(Pagemap.pagesFile(dir, 2));
        assertArrayEquals(slice(4 * P, P), Arrays.copyOfRange(kept, (int) (4 * P), (int) (5 * P)));
        assertArrayEquals(slice(7 * P, 2 * P), Arrays.copyOfRange(kept, (int) (5 * P), (int) (7 * P)));
    }

    @Test
    void imagesItCannotChangeStayAsCriuWroteThem() throws Exception {
        byte[] pagemap = Files.readAllBytes(Pagemap.file(dir, PID));
        List<Span> spans = List.of(new Span(0x100000, 0x108000));

        writeInventory(null);   // criu older than 4.1: nothing would refuse a restore without us
        assertThrows(ImageException.class, () -> HostCopyImages.move(dir, PID, spans, 1));
        writeInventory(List.of("cuda_plugin"));

        Files.write(Pagemap.pagesFile(dir, 1), Arrays.copyOf(pages, pages.length - 1));
        assertThrows(ImageException.class, () -> HostCopyImages.move(dir, PID, spans, 1));
        Files.write(Pagemap.pagesFile(dir, 1), pages);

        new Pagemap(1, List.of(new Pagemap.Run(0x100000, 8, Pagemap.PE_LAZY))).write(Pagemap.file(dir, 8));
        assertThrows(ImageException.class, () -> HostCopyImages.move(dir, 8, spans, 1));

        assertEquals(0, HostCopyImages.move(dir, PID, spans, 1L << 30), "too little to be worth it");
        assertArrayEquals(pagemap, Files.readAllBytes(Pagemap.file(dir, PID)));
        assertFalse(Files.exists(Pagemap.pagesFile(dir, 2)));
        assertTrue(HostCopyImages.files(dir).isEmpty());
        assertEquals(List.of("cuda_plugin"), InventoryPlugins.required(dir));
    }

    @Test
    void aRecordThatIsNotWholePagesIsRefused() throws Exception {
        CudaHostCopyEntry bad = CudaHostCopyEntry.newBuilder().setPid(PID).setPagesId(1)
                .addRanges(CudaHostCopyRange.newBuilder().setVaddr(0x1000).setLength(100).setOffset(0)).build();
        ImageIO.writeEntries(HostCopyImages.file(dir, PID), HostCopyImages.MAGIC, List.of(bad));
        ImageException e = assertThrows(ImageException.class, () -> HostCopyImages.readAll(dir));
        assertTrue(e.getMessage().contains("cuda-hostcopy-7.img"), e.getMessage());
        ImageIO.writeEntries(HostCopyImages.file(dir, 9), HostCopyImages.MAGIC, List.of(bad.toBuilder().clearRanges().build()));
        Files.delete(HostCopyImages.file(dir, PID));
        assertThrows(ImageException.class, () -> HostCopyImages.readAll(dir), "pid 7 in a file named for pid 9");
    }

    @Test
    void theShimClaimsTheMarkerThisPluginWrites() throws Exception {
        Path makefile = Path.of(System.getProperty("user.dir")).getParent().resolve("native/Makefile");
        assertTrue(Files.readString(makefile).contains("CUDA_FORMAT = " + HostCopyImages.MARKER + "\n"),
                "native/Makefile's CUDA_FORMAT must be " + HostCopyImages.MARKER);
        assertFalse(HostCopyImages.MARKER.startsWith("cuda_plugin"),
                "criu matches a loaded plugin's name as a prefix: upstream's cuda_plugin would claim the marker");
    }
}

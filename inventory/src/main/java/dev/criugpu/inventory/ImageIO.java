package dev.criugpu.inventory;

import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Whole-file access to CRIU protobuf images; the one place in the project that reads and writes them.
 *
 * <p>Framing: inventory.img starts with {@link #INVENTORY_MAGIC} alone; other images start with
 * {@link #COMMON_MAGIC} and then their own magic (e.g. {@link #PSTREE_MAGIC}, {@link ImageMagic#CORE}); then
 * come entries, each a 32-bit little-endian length followed by a protobuf message. Raw page files have no header
 * and are handled by {@link RawPages}.
 *
 * <p>Messages live in {@code dev.criugpu.inventory.images} (InventoryEntry, PstreeEntry, CoreEntry,
 * TaskKobjIdsEntry, ...). For large images or mixed entry types use {@link ImageReader} / {@link ImageWriter}.
 */
public final class ImageIO {
    private ImageIO() {
    }

    public static final int COMMON_MAGIC = 0x54564319;
    public static final int INVENTORY_MAGIC = 0x58313116;
    public static final int PSTREE_MAGIC = 0x50273030;

    /**
     * Every entry of {@code file}, parsed with {@code parser} (e.g. {@code PstreeEntry.parser()}).
     *
     * @throws ImageException (one line, naming the file) for a missing file, wrong magic, a truncated entry, an
     *     entry length beyond the end of the file, or bytes that are not a valid message
     */
    public static <M extends MessageLite> List<M> readEntries(Path file, int imageMagic, Parser<M> parser)
            throws ImageException {
        List<M> entries = new ArrayList<>();
        try (ImageReader reader = ImageReader.open(file, imageMagic)) {
            for (M m; (m = reader.next(parser)) != null; ) entries.add(m);
        }
        return entries;
    }

    /** The single entry of an image that holds exactly one (inventory.img). */
    public static <M extends MessageLite> M readSingle(Path file, int imageMagic, Parser<M> parser)
            throws ImageException {
        List<M> entries = readEntries(file, imageMagic, parser);
        if (entries.size() != 1) {
            throw new ImageException(file, "expected exactly one entry, found " + entries.size());
        }
        return entries.getFirst();
    }

    /**
     * Writes {@code entries} as an image of type {@code imageMagic}, atomically: a temporary file in the same
     * directory, fsync, rename over {@code file}, fsync of the directory. On failure {@code file} is unchanged.
     */
    public static void writeEntries(Path file, int imageMagic, List<? extends MessageLite> entries)
            throws ImageException {
        try (ImageWriter writer = ImageWriter.create(file, imageMagic)) {
            for (MessageLite entry : entries) writer.write(entry);
            writer.commit();
        }
    }
}

package dev.criugpu.inventory;

import java.util.Map;

/**
 * CRIU's image magics (criu/include/magic.h) and how each kind of image starts. Most images begin with
 * {@link ImageIO#COMMON_MAGIC} followed by their own magic; inventory.img has its magic alone; service files
 * (stats, irmap cache) begin with {@link #SERVICE_MAGIC}. Raw images (pages-*.img) have no header at all.
 */
public final class ImageMagic {
    private ImageMagic() {
    }

    public static final int RAW = 0;
    public static final int SERVICE_MAGIC = 0x55105940;
    public static final int CORE = 0x55053847;
    public static final int IDS = 0x54432030;
    public static final int PAGEMAP = 0x56084025;
    public static final int MM = 0x57492820;
    public static final int FDINFO = 0x56213732;
    public static final int FILES = 0x56303138;
    public static final int REG_FILES = 0x50363636;
    public static final int CREDS = 0x54023547;
    public static final int FS = 0x51403912;
    public static final int MNTS = 0x55563928;
    public static final int CGROUP = 0x59383330;
    public static final int SECCOMP = 0x64413049;
    public static final int UTSNS = 0x54473203;
    public static final int STATS = 0x57093306;
    public static final int IRMAP_CACHE = 0x57004059;

    private static final Map<Integer, String> NAMES = Map.ofEntries(
            Map.entry(ImageIO.COMMON_MAGIC, "common"),
            Map.entry(SERVICE_MAGIC, "service"),
            Map.entry(ImageIO.INVENTORY_MAGIC, "inventory"),
            Map.entry(ImageIO.PSTREE_MAGIC, "pstree"),
            Map.entry(CORE, "core"),
            Map.entry(IDS, "ids"),
            Map.entry(PAGEMAP, "pagemap"),
            Map.entry(MM, "mm"),
            Map.entry(FDINFO, "fdinfo"),
            Map.entry(FILES, "files"),
            Map.entry(REG_FILES, "reg-files"),
            Map.entry(CREDS, "creds"),
            Map.entry(FS, "fs"),
            Map.entry(MNTS, "mnts"),
            Map.entry(CGROUP, "cgroup"),
            Map.entry(SECCOMP, "seccomp"),
            Map.entry(UTSNS, "utsns"),
            Map.entry(STATS, "stats"),
            Map.entry(IRMAP_CACHE, "irmap-cache"));

    /** The magics a file of this image type starts with, in file order. */
    static int[] header(int imageMagic) {
        if (imageMagic == ImageIO.INVENTORY_MAGIC) return new int[] {imageMagic};
        if (imageMagic == STATS || imageMagic == IRMAP_CACHE) return new int[] {SERVICE_MAGIC, imageMagic};
        return new int[] {ImageIO.COMMON_MAGIC, imageMagic};
    }

    /** {@code 0x50273030 (pstree)}, or just the hex for a magic we do not know. */
    public static String describe(int magic) {
        String hex = String.format("0x%08x", magic);
        String name = NAMES.get(magic);
        return name == null ? hex : hex + " (" + name + ")";
    }
}

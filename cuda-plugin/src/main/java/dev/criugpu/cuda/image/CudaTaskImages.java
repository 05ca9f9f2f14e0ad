package dev.criugpu.cuda.image;

import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.cuda.gpu.GpuUuid;
import dev.criugpu.cuda.state.CudaState;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.ImageIO;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The plugin's per-task files {@code cuda-plugin-<pid>.img} in the images directory. */
public final class CudaTaskImages {
    /** Image magic of our files ("CUDA" in ASCII); criu never reads them. */
    public static final int MAGIC = 0x43554441;
    /** More than any GPU holds (2^32 MiB = 4 PiB): a larger used_mib is garbage, and sums of them must not overflow. */
    static final long MAX_USED_MIB = 1L << 32;
    private static final Pattern NAME = Pattern.compile("cuda-plugin-([0-9]+)\\.img");

    private CudaTaskImages() {
    }

    public static Path file(Path imageDir, int pid) {
        return imageDir.resolve("cuda-plugin-" + pid + ".img");
    }

    public static void write(Path imageDir, CudaTaskEntry entry) throws ImageException {
        ImageIO.writeEntries(file(imageDir, entry.getPid()), MAGIC, List.of(entry));
    }

    /**
     * Every task record in {@code imageDir}, each checked to be one a restore can act on.
     *
     * @throws ImageException (one line naming the file) for a file that is not one of ours, whose pid disagrees with
     *     its name, or that holds an unknown CUDA state, a malformed GPU UUID or an impossible memory size
     */
    public static List<CudaTaskEntry> readAll(Path imageDir) throws ImageException {
        List<CudaTaskEntry> entries = new ArrayList<>();
        for (Path f : files(imageDir)) {
            // read through the images dir's fd, a regular file only (ImageReader)
            CudaTaskEntry e = ImageIO.readSingle(f, MAGIC, CudaTaskEntry.parser());
            Matcher m = NAME.matcher(f.getFileName().toString());
            if (!m.matches() || !m.group(1).equals(Integer.toUnsignedString(e.getPid())) || e.getPid() == 0) {
                throw new ImageException(f, "holds pid " + Integer.toUnsignedString(e.getPid()) + ", which its name does not say");
            }
            check(f, e);
            entries.add(e);
        }
        return entries;
    }

    private static void check(Path f, CudaTaskEntry e) throws ImageException {
        if (CudaState.ofValue(e.getInitialState()).isEmpty()) {
            throw new ImageException(f, "unknown initial CUDA state " + Integer.toUnsignedString(e.getInitialState()));
        }
        List<CudaGpuEntry> gpus = new ArrayList<>(e.getGpusList());
        gpus.addAll(e.getVisibleList());
        for (CudaGpuEntry g : gpus) {
            try {
                GpuUuid.parse(g.getUuid());
            } catch (IllegalArgumentException x) {
                throw new ImageException(f, x.getMessage());
            }
            if (g.getUsedMib() < 0 || g.getUsedMib() > MAX_USED_MIB) {
                throw new ImageException(f, "GPU " + g.getUuid() + ": " + Long.toUnsignedString(g.getUsedMib())
                        + " MiB used is not a memory size");
            }
        }
    }

    /** Our files in {@code imageDir}, listed through its fd ({@link ImageFiles}); none when it is unreadable. */
    public static List<Path> files(Path imageDir) {
        try {
            return ImageFiles.list(imageDir).stream().filter(n -> NAME.matcher(n).matches()).map(imageDir::resolve)
                    .sorted().toList();
        } catch (IOException e) {
            return List.of();
        }
    }
}

package dev.criugpu.cuda.image;

import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.ImageIO;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** The plugin's per-task files {@code cuda-plugin-<pid>.img} in the images directory. */
public final class CudaTaskImages {
    /** Image magic of our files ("CUDA" in ASCII); criu never reads them. */
    public static final int MAGIC = 0x43554441;
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
     * Every task record in {@code imageDir}.
     *
     * @throws ImageException for a file that is not one of ours or whose pid disagrees with its name
     */
    public static List<CudaTaskEntry> readAll(Path imageDir) throws ImageException {
        List<CudaTaskEntry> entries = new ArrayList<>();
        for (Path f : files(imageDir)) {
            CudaTaskEntry e = ImageIO.readSingle(f, MAGIC, CudaTaskEntry.parser());
            Matcher m = NAME.matcher(f.getFileName().toString());
            if (!m.matches() || Integer.parseInt(m.group(1)) != e.getPid()) {
                throw new ImageException(f, "holds pid " + e.getPid() + ", which its name does not say");
            }
            entries.add(e);
        }
        return entries;
    }

    /** Our files in {@code imageDir} (none when the directory is unreadable). */
    public static List<Path> files(Path imageDir) {
        try (Stream<Path> s = Files.list(imageDir)) {
            return s.filter(p -> NAME.matcher(p.getFileName().toString()).matches()).sorted().toList();
        } catch (IOException e) {
            return List.of();
        }
    }
}

package dev.criugpu.cuda.inherited;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.DeviceFile;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.cuda.image.CudaInheritedEntry;
import dev.criugpu.cuda.image.CudaInheritedFile;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.ImageIO;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * {@code /dev/nvidia*} files and mappings of tasks that hold no CUDA state of their own: the children a CUDA process
 * fork()ed (PyTorch's DataLoader workers) inherit its descriptors and device mappings but never call CUDA (it is not
 * fork-safe). By the time criu looks at a task's files and mappings, every CUDA task has been checkpointed, and the
 * driver has closed and unmapped its devices: what is left is such an inherited reference. The dump records the files
 * ({@code cuda-plugin-inherited.img}); a restore gives the task inert stand-ins at the same fd numbers and addresses
 * ({@link InheritedPlan}), without talking to the GPU.
 */
public final class InheritedDevices {
    public static final String IMAGE = "cuda-plugin-inherited.img";
    /** Our own image magic ("CUDI"); criu never reads the file. */
    public static final int MAGIC = 0x43554449;
    static final String PREFIX = "/dev/nvidia";
    private static final Logger log = LoggerFactory.getLogger(InheritedDevices.class);
    private static final int O_ACCMODE = 03;
    private static final int O_NONBLOCK = 04000;

    private final Path imageDir;
    private final List<CudaInheritedFile> files = new ArrayList<>();
    private boolean mappings;

    public InheritedDevices(Path imageDir) {
        this.imageDir = imageDir;
    }

    /** The path criu's fd {@code fd} (a copy of the task's) names, e.g. {@code /dev/nvidia0}. */
    static Optional<String> pathOf(int fd) {
        try {
            return Optional.of(Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString());
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.empty();
        }
    }

    /** Whether {@code path} is an NVIDIA device node (/dev/nvidiactl, /dev/nvidia<N>, /dev/nvidia-uvm, ...). */
    public static boolean isNvidiaDevice(String path) {
        return path.startsWith(PREFIX);
    }

    /** HANDLE_DEVICE_VMA: 0 for an NVIDIA device mapping (a stand-in replaces it at restore), else not ours. */
    public int handleDeviceVma(int fd, DeviceFile st) {
        Optional<String> path = pathOf(fd);
        if (!st.isCharDevice() || path.isEmpty() || !isNvidiaDevice(path.get())) return Errno.NOT_SUPPORTED;
        if (!mappings) log.info("a task holds a mapping of {} without CUDA state of its own (inherited through fork); "
                + "a restore maps /dev/zero there instead", path.get());
        mappings = true;
        write();
        return 0;
    }

    /** DUMP_EXT_FILE: an NVIDIA device file is recorded (criu restores it through us), anything else is not ours. */
    public int dumpExtFile(int fd, int id) {
        Optional<String> path = pathOf(fd);
        if (path.isEmpty() || !isNvidiaDevice(path.get())) return Errno.NOT_SUPPORTED;
        int flags = openFlags(fd) & (O_ACCMODE | O_NONBLOCK);
        files.add(CudaInheritedFile.newBuilder().setId(id).setPath(path.get()).setFlags(flags).build());
        log.debug("file id {}: {} held without CUDA state (inherited through fork); a restore puts /dev/null there", id, path.get());
        write();
        return 0;
    }

    /** Whether anything was recorded (then the image needs this plugin to be restored). */
    public boolean recorded() {
        return mappings || !files.isEmpty();
    }

    private static int openFlags(int fd) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/fdinfo/" + fd))) {
                if (line.startsWith("flags:")) return Integer.parseInt(line.substring(6).trim(), 8);
            }
        } catch (IOException | NumberFormatException e) {
            log.debug("fd {}: no flags in /proc/self/fdinfo ({}); read-write assumed", fd, e.getMessage());
        }
        return 02; // O_RDWR
    }

    private void write() {
        Path file = imageDir.resolve(IMAGE);
        CudaInheritedEntry e = CudaInheritedEntry.newBuilder().addAllFiles(files).setMappings(mappings).build();
        try {
            ImageFiles.delete(imageDir, IMAGE);
            ImageIO.writeEntries(file, MAGIC, List.of(e));
        } catch (IOException e1) {
            throw new CriuException(Errno.EIO, file + ": cannot write: " + e1.getMessage());
        }
    }

    /** The record of a dump, or empty when it made none. */
    public static Optional<CudaInheritedEntry> read(Path imageDir) throws ImageException {
        Path file = imageDir.resolve(IMAGE);
        if (!Files.isRegularFile(file)) return Optional.empty();
        return Optional.of(ImageIO.readSingle(file, MAGIC, CudaInheritedEntry.parser()));
    }
}

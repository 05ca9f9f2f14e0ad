package dev.criugpu.cuda.inherited;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.DeviceFile;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.ImageFiles;
import dev.criugpu.api.sys.Syscalls;
import dev.criugpu.cuda.image.CudaInheritedEntry;
import dev.criugpu.cuda.image.CudaInheritedFile;
import dev.criugpu.inventory.ImageException;
import dev.criugpu.inventory.ImageIO;
import dev.criugpu.inventory.ImageWriter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@code /dev/nvidia*} files and mappings of tasks that hold no CUDA state of their own: the children a CUDA process
 * fork()ed (PyTorch's DataLoader workers) inherit its descriptors and device mappings but never call CUDA (it is not
 * fork-safe). By the time criu looks at a task's files and mappings, every CUDA task has been checkpointed, and the
 * driver has closed and unmapped its devices: what is left is such an inherited reference. The dump records the files
 * ({@code cuda-plugin-inherited.img}); a restore gives the task inert stand-ins at the same fd numbers and addresses
 * ({@link InheritedPlan}), without talking to the GPU.
 *
 * <p>A file is claimed only when it is what that story says: a character device of NVIDIA's driver (by major
 * number, {@link NvidiaMajors}) and an open file a CUDA task of the tree had too, before its checkpoint
 * ({@link CudaFileShares}), and no longer has after it. A mapping is claimed when it is of an NVIDIA device and the
 * tree has a CUDA task or a claimed file. Anything else is declined, with one line naming the device and why: criu
 * then refuses it with its own error, rather than restoring a task that really used the device onto a stand-in.
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
    private final NvidiaMajors majors;
    private final CudaFileShares shares;
    private final Set<Integer> tree = new LinkedHashSet<>();
    private final Set<Integer> cuda = new LinkedHashSet<>();
    private final Set<Integer> scanned = new HashSet<>();
    private final Set<String> declined = new HashSet<>();
    private final List<CudaInheritedFile> files = new ArrayList<>();
    private boolean mappings;
    /** Opened at the first claim, so that an images dir we cannot write fails the dump then; committed at its end. */
    private ImageWriter writer;

    public InheritedDevices(Path imageDir) {
        this(imageDir, NvidiaMajors.read(NvidiaMajors.PROC_DEVICES), Syscalls.libc());
    }

    InheritedDevices(Path imageDir, NvidiaMajors majors, Syscalls sys) {
        this.imageDir = imageDir;
        this.majors = majors;
        this.shares = new CudaFileShares(sys, majors);
    }

    /** PAUSE_DEVICES saw {@code pid}, a task of the tree; {@code holdsCuda}: the dump checkpoints its CUDA state. */
    public void paused(int pid, boolean holdsCuda) {
        tree.add(pid);
        if (holdsCuda) cuda.add(pid);
    }

    /**
     * CHECKPOINT_DEVICES of {@code pid}, before the driver's checkpoint closes a CUDA task's files: which files of
     * the tasks without CUDA state are its. Every task of the tree is stopped by now.
     */
    public void beforeCheckpoint(int pid) {
        if (!cuda.contains(pid) || !scanned.add(pid)) return;
        long t0 = System.nanoTime();
        List<Integer> others = tree.stream().filter(p -> !cuda.contains(p)).toList();
        int before = shares.count();
        shares.scan(pid, others);
        log.debug("pid {}: {} NVIDIA file(s) of {} task(s) without CUDA state are its own (found in {} us)", pid,
                shares.count() - before, others.size(), (System.nanoTime() - t0) / 1000);
    }

    /** HANDLE_DEVICE_VMA, once per device mapping of every task: {@code st} decides, no path is looked up. */
    public int handleDeviceVma(int fd, DeviceFile st) {
        if (!majors.isNvidia(st)) return Errno.NOT_SUPPORTED;
        if (cuda.isEmpty() && files.isEmpty()) {
            return decline(fd, "mapped by a task of a tree in which this dump found no CUDA task (none, or no usable "
                    + "CUDA backend to ask: see above)");
        }
        if (!mappings) {
            log.info("{} is mapped by a task without CUDA state of its own (inherited through fork); a restore maps "
                    + "/dev/zero there instead", pathOf(fd));
            openImage();
            mappings = true;
        }
        return 0;
    }

    /** DUMP_EXT_FILE: criu's fd {@code fd} is its copy of a task's (the same open file). */
    public int dumpExtFile(int fd, int id) {
        Optional<DeviceFile> st = DeviceFiles.stat(Path.of("/proc/self/fd/" + fd));
        if (st.isEmpty() || !majors.isNvidia(st.get())) return Errno.NOT_SUPPORTED;
        Optional<String> why = whyNotInherited(fd, st.get().rdev());
        if (why.isPresent()) return decline(fd, why.get());
        String path = pathOf(fd);
        int flags = openFlags(fd) & (O_ACCMODE | O_NONBLOCK);
        openImage();
        files.add(CudaInheritedFile.newBuilder().setId(id).setPath(path).setFlags(flags).build());
        log.debug("file id {}: {} held without CUDA state (inherited through fork); a restore puts /dev/null there", id, path);
        return 0;
    }

    private Optional<String> whyNotInherited(int fd, long rdev) {
        if (cuda.isEmpty()) {
            return Optional.of("this dump found no CUDA task in the tree (none, or no usable CUDA backend to ask: see above)");
        }
        Optional<CudaFileShares.Share> share = shares.find(fd, rdev);
        if (share.isEmpty()) {
            return Optional.of(shares.unknown().map(u -> "cannot tell whether a CUDA task of the tree shares it: " + u)
                    .orElse("no task without CUDA state shares this open file with a CUDA task of the tree (the task "
                            + "holding it opened the device itself, or the CUDA task was checkpointed before this dump)"));
        }
        if (shares.stillInCudaTask(share.get(), fd)) {
            return Optional.of("CUDA task " + share.get().cudaPid() + " still has it open after its checkpoint, so "
                    + "something other than CUDA uses it there");
        }
        return Optional.empty();
    }

    /** Not ours after all: criu refuses the file or mapping with its own error, and this line says why. */
    private int decline(int fd, String why) {
        String line = pathOf(fd) + ": an NVIDIA device, not taken as inherited: " + why;
        if (declined.add(line)) log.error("{}", line);
        return Errno.NOT_SUPPORTED;
    }

    /** Whether anything was recorded (then the image needs this plugin to be restored). */
    public boolean recorded() {
        return mappings || !files.isEmpty();
    }

    /**
     * criu's exit hook of the dump: the record is written now, once, under a temporary name renamed into place, or
     * (a failed dump) dropped. Never throws: criu's exit cannot fail any more.
     */
    public void finish(boolean dumpSucceeded) {
        if (writer == null) return;
        try (ImageWriter w = writer) {
            writer = null;
            if (!dumpSucceeded) return;
            w.write(CudaInheritedEntry.newBuilder().addAllFiles(files).setMappings(mappings).build());
            w.commit();
        } catch (ImageException e) {
            log.error("{}; a restore of this image fails at its inherited NVIDIA files", e.getMessage());
        }
    }

    private void openImage() {
        if (writer != null) return;
        try {
            writer = ImageWriter.create(imageDir.resolve(IMAGE), MAGIC);
        } catch (ImageException e) {
            throw new CriuException(Errno.EIO, e.getMessage());
        }
    }

    /** The path criu's fd {@code fd} (a copy of the task's) names, e.g. {@code /dev/nvidia0}. */
    static String pathOf(int fd) {
        try {
            return Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString();
        } catch (IOException | UnsupportedOperationException e) {
            return "fd " + fd;
        }
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

    /**
     * The record of a dump, or empty when it made none.
     *
     * @throws ImageException (one line naming the file) for a file that is not one of ours or holds a file record a
     *     restore cannot honour
     */
    public static Optional<CudaInheritedEntry> read(Path imageDir) throws ImageException {
        Path file = imageDir.resolve(IMAGE);
        try {
            // through the images dir's fd; a symlink there counts as there, and is refused as not a regular file
            if (!ImageFiles.exists(imageDir, IMAGE)) return Optional.empty();
        } catch (IOException e) {
            throw new ImageException(file, "cannot look it up: " + e.getMessage(), e);
        }
        CudaInheritedEntry e = ImageIO.readSingle(file, MAGIC, CudaInheritedEntry.parser());
        Set<Integer> ids = new HashSet<>();
        for (CudaInheritedFile f : e.getFilesList()) {
            String what = "file id " + Integer.toUnsignedString(f.getId());
            if (!ids.add(f.getId())) throw new ImageException(file, what + " is recorded twice");
            InheritedPlan.openFlags(f).orElseThrow(() -> new ImageException(file, what + " (" + f.getPath()
                    + "): open flags 0" + Integer.toOctalString(f.getFlags()) + " are not an access mode with at most O_NONBLOCK"));
        }
        return Optional.of(e);
    }
}

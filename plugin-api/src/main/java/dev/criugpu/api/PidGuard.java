package dev.criugpu.api;

import dev.criugpu.api.sys.JdkThreads;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * DESIGN rule 3: a JVM started in criu before a restore forks its tasks must not hold a tid that a restored task
 * or thread needs, or criu fails with "Can't fork ... File exists". The restore probe picks a window of pids free of
 * the image's ids; the shim keeps the next pid parked below it while Java starts and every plugin's init runs; init
 * starts every thread the restore will use, and this check proves the result against the image.
 */
public final class PidGuard {
    private PidGuard() {
    }

    /**
     * The last step of a restore's bootstrap: starts the threads the JDK would otherwise start later, then checks
     * every thread of this JVM against the image's pids and tids. Does nothing outside criu.
     */
    static void checkRestore(CriuServices services) {
        Optional<Path> dir = services.imageDir();
        if (dir.isEmpty()) return;
        startLazyJdkThreads();
        requireDisjoint(ownTids(), imageIds(dir.get()));
        if (services.isLoggable(LogLevel.DEBUG)) services.log(LogLevel.DEBUG, "JVM threads after init: " + threads());
    }

    /** How many pids above the parked one the JVM's threads (a few dozen) and the host's other forks may take. */
    static final int PARK_WINDOW = 1024;
    /** The kernel hands out pids below this only before the first wrap (RESERVED_PIDS). */
    static final int RESERVED_PIDS = 300;

    /**
     * The restore probe's part: tells the shim where to park pids while criu's JVM starts, below a window none of the
     * image's ids lie in. An image can hold ids anywhere, the top of the range included (pid_max 32768: a dumped
     * DataLoader's threads at 31784 met the JVM's parked there, measured).
     */
    static void chooseParking(CriuServices services) {
        Optional<Path> dir = services.imageDir();
        if (dir.isEmpty()) return;
        long pidMax = pidMax();
        long at = parkingPoint(imageIds(dir.get()), pidMax, PARK_WINDOW);
        if (services.parkRestorePidsAfter(at) && services.isLoggable(LogLevel.DEBUG)) {
            services.log(LogLevel.DEBUG, "criu's JVM will take pids after " + at + " (pid_max " + pidMax + ")");
        }
    }

    /**
     * The value for ns_last_pid that leaves the {@code width} pids above it free of {@code ids}, as high as possible;
     * where no gap is that wide, the start of the widest one.
     */
    public static long parkingPoint(Collection<Integer> ids, long pidMax, int width) {
        TreeSet<Long> taken = new TreeSet<>();
        taken.add((long) RESERVED_PIDS - 1);
        taken.add(pidMax);
        for (int id : ids) if (id >= RESERVED_PIDS && id < pidMax) taken.add((long) id);
        long widest = RESERVED_PIDS - 1, widestFree = -1;
        for (long above = pidMax; above >= RESERVED_PIDS; ) {
            long below = taken.lower(above);
            long free = above - below - 1;
            if (free >= width) return above - 1 - width;
            if (free > widestFree) {
                widest = below;
                widestFree = free;
            }
            above = below;
        }
        return widest;
    }

    static long pidMax() {
        try {
            // not readString/readAllBytes: on a sysctl file (st_size 0) they returned its first byte, "3" (JDK 25)
            return Long.parseLong(Files.readAllLines(Path.of("/proc/sys/kernel/pid_max")).getFirst().strip());
        } catch (IOException | RuntimeException e) {
            return 32768; // the kernel's default
        }
    }

    private static Set<Integer> imageIds(Path dir) {
        RestoredTaskIds ids = ServiceLoader.load(RestoredTaskIds.class, PidGuard.class.getClassLoader()).findFirst()
                .orElseThrow(() -> new CriuException(Errno.ENOENT, "no reader of pstree.img on the class path "
                        + "(the inventory jar is missing): the JVM's threads cannot be checked against the image"));
        return ids.of(dir);
    }

    /**
     * The JDK's Common-Cleaner starts with the first object it cleans (a FileChannel, an automatic arena): a refill
     * worker reading a pages file during the restore would start it then, with an ordinary pid.
     */
    static void startLazyJdkThreads() {
        JdkThreads.startCommonCleaner();
    }

    /** The thread ids of this process. */
    public static Set<Integer> ownTids() {
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            Set<Integer> tids = new TreeSet<>();
            tasks.forEach(p -> tids.add(Integer.parseInt(p.getFileName().toString())));
            return tids;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list /proc/self/task", e);
        }
    }

    /** {@code tid name, ...} of this process's threads, for criu's log. */
    public static String threads() {
        return ownTids().stream().map(t -> t + " " + comm(t)).collect(Collectors.joining(", "));
    }

    private static String comm(int tid) {
        try {
            return Files.readString(Path.of("/proc/self/task/" + tid + "/comm")).strip();
        } catch (IOException e) {
            return "?"; // the thread ended meanwhile
        }
    }

    /** Fails with one line naming the colliding ids when any of {@code tids} is among {@code imageIds}. */
    public static void requireDisjoint(Collection<Integer> tids, Collection<Integer> imageIds) {
        Set<Integer> clash = new TreeSet<>(tids);
        clash.retainAll(Set.copyOf(imageIds));
        if (!clash.isEmpty()) {
            throw new CriuException(Errno.EBUSY, "JVM threads hold ids " + clash + " that the image's tasks need; "
                    + "restore into a new pid namespace or free those ids, then retry");
        }
    }
}

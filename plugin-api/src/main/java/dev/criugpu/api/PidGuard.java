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
 * or thread needs, or criu fails with "Can't fork ... File exists". The shim keeps the next pid parked at the top of
 * the range while Java starts and every plugin's init runs; init starts every thread the restore will use, and this
 * check proves the result against the image before anything is forked.
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
        RestoredTaskIds ids = ServiceLoader.load(RestoredTaskIds.class, PidGuard.class.getClassLoader()).findFirst()
                .orElseThrow(() -> new CriuException(Errno.ENOENT, "no reader of pstree.img on the class path "
                        + "(the inventory jar is missing): the JVM's threads cannot be checked against the image"));
        requireDisjoint(ownTids(), ids.of(dir.get()));
        if (services.isLoggable(LogLevel.DEBUG)) services.log(LogLevel.DEBUG, "JVM threads after init: " + threads());
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

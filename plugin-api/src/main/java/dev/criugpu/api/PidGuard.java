package dev.criugpu.api;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * DESIGN rule 3: a JVM started in criu before a restore forks its tasks must not hold a tid that a restored task
 * or thread needs, or criu fails with "Can't fork ... File exists". The shim parks the JVM's threads at the top
 * of the pid range; this check proves the result against the image before anything is forked.
 */
public final class PidGuard {
    private PidGuard() {
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

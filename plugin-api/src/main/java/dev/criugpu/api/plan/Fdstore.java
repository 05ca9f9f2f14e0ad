package dev.criugpu.api.plan;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.util.Objects;
import java.util.function.IntUnaryOperator;

/**
 * criu's fdstore: fds criu's main process keeps on a service socket that every forked task inherits (unlike
 * plain fds, which criu closes in its children), so a task gets its own copy with {@code fdstore_get} (a plan's
 * SEND_FDS step) whatever namespaces it was restored into. criu 4.2 sets it up before plugin init on restore;
 * older criu does not. Inside criu, {@link dev.criugpu.api.CriuServices#fdstore()} hands it out.
 */
public final class Fdstore {
    private static final String NEEDS = "criu 4.2 or newer is needed to restore device files in restored tasks";
    private final IntUnaryOperator add;

    private Fdstore(IntUnaryOperator add) {
        this.add = add;
    }

    /** Over criu's {@code int fdstore_add(int fd)} (or a simulator's function of that shape). */
    public static Fdstore of(IntUnaryOperator fdstoreAdd) {
        return new Fdstore(Objects.requireNonNull(fdstoreAdd, "fdstore_add"));
    }

    /** Stores a copy of {@code fd}; returns its id. */
    public int add(int fd) {
        int id = add.applyAsInt(fd);
        if (id < 0) throw new CriuException(Errno.ENOTSUP, "criu's fdstore refused an fd (" + NEEDS + ")");
        return id;
    }
}

package dev.criugpu.api.plan;

import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * criu's fdstore: fds criu's main process keeps on a service socket that every forked task inherits (unlike
 * plain fds, which criu closes in its children), so a task gets its own copy with {@code fdstore_get} (a plan's
 * SEND_FDS step) whatever namespaces it was restored into. criu 4.2 sets it up before plugin init on restore;
 * older criu does not. Inside criu, {@link dev.criugpu.api.CriuServices#fdstore()} hands it out.
 */
public final class Fdstore {
    private static final String NEEDS = "criu 4.2 or newer is needed to restore device files in restored tasks";
    private final MethodHandle add;

    private Fdstore(MethodHandle add) {
        this.add = add;
    }

    /** Over criu's {@code int fdstore_add(int fd)} (or a simulator's function of that shape). */
    public static Fdstore of(MemorySegment fdstoreAdd) {
        if (fdstoreAdd.equals(MemorySegment.NULL)) {
            throw new CriuException(Errno.ENOTSUP, "this criu exports no fdstore_add (" + NEEDS + ")");
        }
        return new Fdstore(Linker.nativeLinker().downcallHandle(fdstoreAdd, FunctionDescriptor.of(JAVA_INT, JAVA_INT)));
    }

    /** Stores a copy of {@code fd}; returns its id. */
    public int add(int fd) {
        int id;
        try {
            id = (int) add.invokeExact(fd);
        } catch (Throwable t) {
            throw new IllegalStateException("fdstore_add", t);
        }
        if (id < 0) throw new CriuException(Errno.ENOTSUP, "criu's fdstore refused an fd (" + NEEDS + ")");
        return id;
    }
}

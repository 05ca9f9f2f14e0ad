package dev.criugpu.cli.sys;

import dev.criugpu.api.bindings.stat;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * libc's stat(2) by path, which gives st_blocks too (glibc 2.33+ exports {@code stat}); bound on first use (FFM: the
 * launcher passes --enable-native-access).
 */
public final class LibcStat {
    /** The fields of {@code struct stat} the checks read; {@code dev} in glibc's dev_t encoding. */
    public record Result(long size, long blocks, long nlink, long dev, long inode, int mode) {
    }

    private LibcStat() {
    }

    private static final class Libc {
        static final MethodHandle STAT = bindStat();
    }

    /** Whether this libc exports {@code stat}. */
    public static boolean available() {
        return Libc.STAT != null;
    }

    /** stat({@code p}); empty when it fails or libc has no {@code stat}. */
    public static Optional<Result> of(Path p) {
        if (Libc.STAT == null) return Optional.empty();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = stat.allocate(a);
            if ((int) Libc.STAT.invokeExact(a.allocateFrom(p.toString()), st) != 0) return Optional.empty();
            return Optional.of(new Result(stat.st_size(st), stat.st_blocks(st), stat.st_nlink(st), stat.st_dev(st),
                    stat.st_ino(st), stat.st_mode(st)));
        } catch (Throwable t) {
            return Optional.empty();
        }
    }

    private static MethodHandle bindStat() {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup().find("stat")
                    .map(a -> linker.downcallHandle(a, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS)))
                    .orElse(null);
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }
}

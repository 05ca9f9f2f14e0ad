package dev.criugpu.cuda.job;

import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.SyscallException;
import dev.criugpu.api.sys.Syscalls;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;

/**
 * The plugin's end of a rank's criu_gpu channel: a memfd the rank made for itself ({@code memfd_create("criu_gpu")},
 * 64 bytes, sealed against growing, shrinking and further seals), taken from the rank with {@code pidfd_getfd} — the
 * rank's own open file, never a path. No other process can put a file into the rank's descriptor table, so no other
 * user or container can redirect what is written; the memfd is gone with the rank; it is the same whatever pid and
 * mount namespace the rank lives in, and criu dumps and restores it with the rank.
 *
 * <p>Layout (little-endian): bytes 0-7 {@code "criu_gpu"}, 8 the version (1), 12 the request (a dump's token, 0 for
 * none: the plugin writes it), 16 released (the token the rank released its communicators for: the rank writes it).
 */
final class RankChannel implements AutoCloseable {
    /** How /proc/PID/fd names the memfd: {@code memfd_create} prefixes "memfd:", and it never had a path. */
    static final String FD_TARGET = "/memfd:criu_gpu (deleted)";
    static final int SIZE = 64;
    static final byte[] MAGIC = "criu_gpu".getBytes(StandardCharsets.US_ASCII);
    static final int VERSION = 1;
    static final int REQUEST = 12;
    static final int RELEASED = 16;
    /** F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW: only a memfd made with MFD_ALLOW_SEALING and sealed so has them. */
    static final int SEALS = 1 | 2 | 4;
    /** A process's descriptors looked at before giving up: criu_gpu makes its channel at import, among the first. */
    private static final int MAX_FDS = 65_536;

    private final int pid;
    private final int fd;

    private RankChannel(int pid, int fd) {
        this.pid = pid;
        this.fd = fd;
    }

    /**
     * The channel of the process {@code pid}, if it has one: empty when none of its descriptors is a criu_gpu memfd of
     * the shape above (a file of that name that is not a sealed memfd of 64 bytes, opened for reading and writing,
     * and starting with the magic and version, is not one).
     *
     * @param proc where /proc is (the descriptor itself is always taken from the running process {@code pid})
     */
    static Optional<RankChannel> open(Path proc, int pid) {
        Optional<Integer> number = channelFd(proc.resolve(Integer.toString(pid)).resolve("fd"));
        if (number.isEmpty()) return Optional.empty();
        Syscalls sys = Syscalls.libc();
        int fd = -1;
        try {
            int pidfd = sys.pidfdOpen(pid);
            try {
                fd = sys.pidfdGetfd(pidfd, number.get());
            } finally {
                sys.close(pidfd);
            }
            if (!isChannel(sys, fd)) {
                sys.close(fd);
                return Optional.empty();
            }
            return Optional.of(new RankChannel(pid, fd));
        } catch (SyscallException e) {
            if (fd >= 0) sys.close(fd);
            return Optional.empty();
        }
    }

    /** Whether /proc shows a descriptor of {@code pid} named as a channel is (its shape not looked at). */
    static boolean shown(Path proc, int pid) {
        return channelFd(proc.resolve(Integer.toString(pid)).resolve("fd")).isPresent();
    }

    /** The number of the first descriptor /proc shows as a criu_gpu memfd. */
    private static Optional<Integer> channelFd(Path fdDir) {
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(fdDir)) {
            int seen = 0;
            for (Path link : fds) {
                if (++seen > MAX_FDS) break;
                try {
                    if (FD_TARGET.equals(Files.readSymbolicLink(link).toString())) {
                        return Optional.of(Integer.parseInt(link.getFileName().toString()));
                    }
                } catch (IOException | NumberFormatException e) {
                    // closed meanwhile, or not a descriptor
                }
            }
        } catch (IOException | RuntimeException e) {
            // the process ended, or its descriptors are not ours to see
        }
        return Optional.empty();
    }

    private static boolean isChannel(Syscalls sys, int fd) {
        Syscalls.FileStat st = sys.fileStat(fd);
        if (!st.isRegularFile() || st.size() != SIZE) return false;
        if ((sys.fcntl(fd, Syscalls.F_GETFL) & Syscalls.O_ACCMODE) != Syscalls.O_RDWR) return false;
        if (sys.fcntl(fd, Syscalls.F_GET_SEALS) != SEALS) return false;
        byte[] head = sys.pread(fd, 12, 0);
        return head.length == 12 && Arrays.equals(Arrays.copyOf(head, 8), MAGIC) && word(head, 8) == VERSION;
    }

    int pid() {
        return pid;
    }

    /** Asks the rank to release its communicators for the dump {@code token} (never 0), or ({@code 0}) to go on. */
    void request(int token) {
        byte[] b = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(token).array();
        if (Syscalls.libc().pwrite(fd, b, REQUEST) != 4) throw new SyscallException(Errno.EIO, "short write to pid " + pid + "'s criu_gpu channel");
    }

    /** The request the rank sees now (0: none). */
    int requested() {
        return word(Syscalls.libc().pread(fd, 4, REQUEST), 0);
    }

    /** The token the rank last said it released its communicators for (0: none). */
    int released() {
        return word(Syscalls.libc().pread(fd, 4, RELEASED), 0);
    }

    private static int word(byte[] b, int at) {
        return b.length < at + 4 ? 0 : ByteBuffer.wrap(b, at, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
    }

    @Override
    public void close() {
        try {
            Syscalls.libc().close(fd);
        } catch (SyscallException e) {
            // nothing left to do with it
        }
    }
}

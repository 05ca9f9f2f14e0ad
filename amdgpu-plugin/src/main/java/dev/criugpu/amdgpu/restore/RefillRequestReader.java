package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.bindings.gpu_plan_h;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Reads one refill request ({@link RefillProtocol}) from a connected socket: the head, the BO indices, then
 * the dma-buf fds in SCM_RIGHTS messages. Short reads are continued; a peer that closes early, a wrong magic or
 * more fds than announced fail with one line naming the pid, and every fd received so far is closed.
 */
public final class RefillRequestReader {
    /** More fds than any KFD process has BOs (the kernel's per-process limit is far lower). */
    static final int MAX_FDS = 1 << 20;

    private RefillRequestReader() {
    }

    /** A request that could not be read, from the task {@code pid}. */
    public static final class Refused extends CriuException {
        private final int pid;

        Refused(int pid, String message) {
            super(Errno.EIO, "pid " + pid + " " + message);
            this.pid = pid;
        }

        public int pid() {
            return pid;
        }
    }

    public static RefillRequest read(int conn) {
        int pid = UnixSockets.peerPid(conn);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment head = a.allocate(RefillProtocol.HEAD);
            long got = UnixSockets.readFully(conn, head);
            if (got < head.byteSize()) {
                throw bad(pid, "closed the refill socket after " + got + " of " + head.byteSize() + " head bytes");
            }
            int magic = head.get(JAVA_INT, RefillProtocol.MAGIC_AT);
            if (magic != RefillProtocol.MAGIC) {
                throw bad(pid, String.format("sent a refill request with magic 0x%08x, not 0x%08x", magic,
                        RefillProtocol.MAGIC));
            }
            int fileId = head.get(JAVA_INT, RefillProtocol.FILE_ID_AT);
            int n = head.get(JAVA_INT, RefillProtocol.NUM_FDS_AT);
            String file = "amdgpu-kfd-" + fileId + ".img";
            if (n < 0 || n > MAX_FDS) throw bad(pid, file + ": announces " + Integer.toUnsignedString(n) + " dma-buf fds");
            MemorySegment index = a.allocate(JAVA_INT, Math.max(1, n)).asSlice(0, 4L * n);
            got = UnixSockets.readFully(conn, index);
            if (got < index.byteSize()) {
                throw bad(pid, file + ": closed the refill socket after " + got / 4 + " of " + n + " BO indices");
            }
            int[] fds = receiveFds(conn, pid, file, n);
            return new RefillRequest(fileId, pid, index.toArray(JAVA_INT), fds);
        }
    }

    private static int[] receiveFds(int conn, int pid, String file, int n) {
        int[] fds = new int[n];
        int have = 0;
        try {
            while (have < n) {
                int[] chunk = UnixSockets.receiveFds(conn, gpu_plan_h.GPU_PLAN_FDS_PER_MSG());
                if (chunk == null) {
                    throw bad(pid, file + ": closed the refill socket after " + have + " of " + n + " dma-buf fds");
                }
                if (chunk.length > n - have) {
                    UnixSockets.closeAll(chunk);
                    throw bad(pid, file + ": sent more than the " + n + " dma-buf fds it announced");
                }
                System.arraycopy(chunk, 0, fds, have, chunk.length);
                have += chunk.length;
            }
            return fds;
        } catch (RuntimeException e) {
            UnixSockets.closeAll(Arrays.copyOf(fds, have));
            throw e;
        }
    }

    private static Refused bad(int pid, String what) {
        return new Refused(pid, what);
    }
}

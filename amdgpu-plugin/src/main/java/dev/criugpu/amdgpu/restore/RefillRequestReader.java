package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.bindings.gpu_plan_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Reads one refill request ({@link RefillProtocol}) from the channel of KFD image {@code fileId}: the head, the BO
 * indices, then the dma-buf fds in SCM_RIGHTS messages. Short reads are continued while the task is still
 * sending; once {@code stopFd} fired, what has not arrived never will. A request that ends early, has a wrong
 * magic or image id, or brings more fds than announced fails with one line naming the image (and the task's pid
 * once known), and every fd received so far is closed.
 */
public final class RefillRequestReader {
    /** More fds than any KFD process has BOs (the kernel's per-process limit is far lower). */
    static final int MAX_FDS = 1 << 20;

    private RefillRequestReader() {
    }

    /** A request that could not be read. */
    public static final class Refused extends CriuException {
        private final int fileId;
        private final int taskPid;

        Refused(int fileId, int taskPid, String message) {
            super(Errno.EIO, message);
            this.fileId = fileId;
            this.taskPid = taskPid;
        }

        public int fileId() {
            return fileId;
        }

        /** The task's pid from the head, or 0 when the head did not arrive. */
        public int taskPid() {
            return taskPid;
        }
    }

    /** The request, or null when nothing at all arrived before {@code stopFd} fired. */
    public static RefillRequest read(int channel, int fileId, int stopFd) {
        String file = ImageNames.kfd(fileId);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment head = a.allocate(RefillProtocol.HEAD);
            long got = UnixSockets.readFully(channel, head, stopFd);
            if (got == 0) return null;
            if (got < head.byteSize()) {
                throw new Refused(fileId, 0, file + ": refill request ended after " + got + " of " + head.byteSize()
                        + " head bytes");
            }
            int pid = head.get(JAVA_INT, RefillProtocol.PID_AT);
            String from = file + ": refill request from pid " + pid;
            int magic = head.get(JAVA_INT, RefillProtocol.MAGIC_AT);
            if (magic != RefillProtocol.MAGIC) {
                throw new Refused(fileId, pid, String.format("%s has magic 0x%08x, not 0x%08x", from, magic, RefillProtocol.MAGIC));
            }
            if (head.get(JAVA_INT, RefillProtocol.FILE_ID_AT) != fileId) {
                throw new Refused(fileId, pid, from + " names amdgpu-kfd-" + head.get(JAVA_INT, RefillProtocol.FILE_ID_AT)
                        + ".img");
            }
            int n = head.get(JAVA_INT, RefillProtocol.NUM_FDS_AT);
            if (n < 0 || n > MAX_FDS) throw new Refused(fileId, pid, from + " announces " + Integer.toUnsignedString(n) + " fds");
            MemorySegment index = a.allocate(JAVA_INT, Math.max(1, n)).asSlice(0, 4L * n);
            got = UnixSockets.readFully(channel, index, stopFd);
            if (got < index.byteSize()) {
                throw new Refused(fileId, pid, from + " ended after " + got / 4 + " of " + n + " BO indices");
            }
            return new RefillRequest(fileId, pid, index.toArray(JAVA_INT), receiveFds(channel, fileId, pid, from, n, stopFd));
        }
    }

    private static int[] receiveFds(int channel, int fileId, int pid, String from, int n, int stopFd) {
        int[] fds = new int[n];
        int have = 0;
        try {
            while (have < n) {
                int[] chunk = UnixSockets.receiveFds(channel, gpu_plan_h.GPU_PLAN_FDS_PER_MSG(), stopFd);
                if (chunk == null) throw new Refused(fileId, pid, from + " ended after " + have + " of " + n + " dma-buf fds");
                if (chunk.length > n - have) {
                    UnixSockets.closeAll(chunk);
                    throw new Refused(fileId, pid, from + " brings more than the " + n + " dma-buf fds it announced");
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
}

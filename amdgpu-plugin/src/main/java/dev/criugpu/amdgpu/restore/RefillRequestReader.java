package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.images.ImageNames;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.bindings.gpu_plan_h;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;


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
        byte[] head = new byte[RefillProtocol.HEAD_BYTES];
        int got = UnixSockets.readFully(channel, head, stopFd);
        if (got == 0) return null;
        if (got < head.length) {
            throw new Refused(fileId, 0, file + ": refill request ended after " + got + " of " + head.length
                    + " head bytes");
        }
        int pid = RefillProtocol.field(head, RefillProtocol.PID_AT);
        String from = file + ": refill request from pid " + pid;
        int magic = RefillProtocol.field(head, RefillProtocol.MAGIC_AT);
        if (magic != RefillProtocol.MAGIC) {
            throw new Refused(fileId, pid, String.format("%s has magic 0x%08x, not 0x%08x", from, magic, RefillProtocol.MAGIC));
        }
        if (RefillProtocol.field(head, RefillProtocol.FILE_ID_AT) != fileId) {
            throw new Refused(fileId, pid, from + " names amdgpu-kfd-" + RefillProtocol.field(head, RefillProtocol.FILE_ID_AT)
                    + ".img");
        }
        int n = RefillProtocol.field(head, RefillProtocol.NUM_FDS_AT);
        if (n < 0 || n > MAX_FDS) throw new Refused(fileId, pid, from + " announces " + Integer.toUnsignedString(n) + " fds");
        byte[] index = new byte[4 * n];
        got = UnixSockets.readFully(channel, index, stopFd);
        if (got < index.length) {
            throw new Refused(fileId, pid, from + " ended after " + got / 4 + " of " + n + " BO indices");
        }
        int[] indices = new int[n];
        ByteBuffer.wrap(index).order(ByteOrder.nativeOrder()).asIntBuffer().get(indices);
        return new RefillRequest(fileId, pid, indices, receiveFds(channel, fileId, pid, from, n, stopFd));
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

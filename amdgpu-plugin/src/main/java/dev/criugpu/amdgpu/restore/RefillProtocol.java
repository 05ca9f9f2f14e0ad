package dev.criugpu.amdgpu.restore;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The refill request a restored task sends criu's main process (a SEND_FDS step of its KFD program): a 16-byte
 * head {u32 magic, i32 KFD image id, u32 fd count, u32 the task's pid in its own pid namespace (a PUT_PID step)},
 * the u32 index in the image's BO list of each fd,
 * then the dma-buf fds as SCM_RIGHTS, at most {@code GPU_PLAN_FDS_PER_MSG} per message, one payload byte each.
 */
public final class RefillProtocol {
    public static final int MAGIC = 0x31465241; // "ARF1"
    public static final int HEAD_BYTES = 16;
    static final long MAGIC_AT = 0;
    static final long FILE_ID_AT = 4;
    static final long NUM_FDS_AT = 8;
    static final long PID_AT = 12;

    private RefillProtocol() {
    }

    /** Head (pid 0, for a PUT_PID step to fill) and indices of the request for KFD image {@code fileId}. */
    public static byte[] request(int fileId, int[] boIndices) {
        ByteBuffer m = ByteBuffer.allocate(HEAD_BYTES + 4 * boIndices.length).order(ByteOrder.nativeOrder());
        m.putInt((int) MAGIC_AT, MAGIC).putInt((int) FILE_ID_AT, fileId).putInt((int) NUM_FDS_AT, boIndices.length);
        m.position(HEAD_BYTES);
        m.asIntBuffer().put(boIndices);
        return m.array();
    }

    /** The head's field at {@code at}, from {@code head} in the native byte order. */
    static int field(byte[] head, long at) {
        return ByteBuffer.wrap(head).order(ByteOrder.nativeOrder()).getInt((int) at);
    }
}

package dev.criugpu.amdgpu.restore;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The refill request a restored task sends criu's main process (a SEND_FDS step of its KFD program): a 16-byte
 * head {u32 magic, i32 KFD image id, u32 fd count, u32 the task's pid in its own pid namespace (a PUT_PID step)},
 * the u32 index in the image's BO list of each fd,
 * then the dma-buf fds as SCM_RIGHTS, at most {@code GPU_PLAN_FDS_PER_MSG} per message, one payload byte each.
 */
public final class RefillProtocol {
    public static final int MAGIC = 0x31465241; // "ARF1"
    public static final StructLayout HEAD = MemoryLayout.structLayout(
            JAVA_INT.withName("magic"), JAVA_INT.withName("file_id"), JAVA_INT.withName("num_fds"), JAVA_INT.withName("pid"));
    static final long MAGIC_AT = 0;
    static final long FILE_ID_AT = 4;
    static final long NUM_FDS_AT = 8;
    static final long PID_AT = 12;

    private RefillProtocol() {
    }

    /** Head and indices of the request for KFD image {@code fileId}. */
    public static MemorySegment request(Arena arena, int fileId, int[] boIndices) {
        MemorySegment m = arena.allocate(HEAD.byteSize() + 4L * boIndices.length, 8);
        m.set(JAVA_INT, MAGIC_AT, MAGIC);
        m.set(JAVA_INT, FILE_ID_AT, fileId);
        m.set(JAVA_INT, NUM_FDS_AT, boIndices.length);
        MemorySegment.copy(boIndices, 0, m, JAVA_INT, HEAD.byteSize(), boIndices.length);
        return m;
    }
}

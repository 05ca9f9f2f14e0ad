package dev.criugpu.api.plan;

import dev.criugpu.api.bindings.gpu_plan_h;
import dev.criugpu.api.sys.PlanMemory;
import dev.criugpu.api.sys.PlanMemory.Step;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One program of a {@link ChildPlan}: what RESTORE_EXT_FILE(file id) runs in a restored task (struct
 * gpu_plan_program's steps, see native/plan/gpu_plan.h). Vendor-neutral: the caller supplies paths, ioctl numbers,
 * buffers of the plan and offsets into them. Made by {@link ChildPlan#program}.
 */
public final class PlanProgram {
    private final PlanMemory memory;
    private final int fileId;
    private final List<Step> steps = new ArrayList<>();

    PlanProgram(PlanMemory memory, int fileId) {
        this.memory = memory;
        this.fileId = fileId;
    }

    public int fileId() {
        return fileId;
    }

    private PlanProgram step(int op, int slot, String what, PlanBuffer buf, long arg, long arg2) {
        steps.add(new Step(op, slot, what, buf, arg, arg2, null, null));
        return this;
    }

    /** slot ← open(path, flags) unless open; {@code high}: above the task's image fds. */
    public PlanProgram open(int slot, String path, int flags, boolean high) {
        byte[] p = Arrays.copyOf(path.getBytes(StandardCharsets.UTF_8), path.getBytes(StandardCharsets.UTF_8).length + 1);
        return step(gpu_plan_h.GPU_PLAN_OPEN(), slot, "open " + path, memory.copyOf(p), Integer.toUnsignedLong(flags),
                high ? 1 : 0);
    }

    public PlanProgram ioctl(int slot, int request, PlanBuffer arg, String what) {
        return step(gpu_plan_h.GPU_PLAN_IOCTL(), slot, what, arg, Integer.toUnsignedLong(request), 0);
    }

    /** The u32 at {@code buf + offset} must lie in [low, high] (unsigned), else the program fails with {@code what}. */
    public PlanProgram require(PlanBuffer buf, long offset, int low, int high, String what) {
        return step(gpu_plan_h.GPU_PLAN_REQUIRE(), -1, what, buf,
                Integer.toUnsignedLong(low) | (Integer.toUnsignedLong(high) << 32), offset);
    }

    /** The u32 at {@code buf + offset} ← slot's fd. */
    public PlanProgram putFd(int slot, PlanBuffer buf, long offset, String what) {
        return step(gpu_plan_h.GPU_PLAN_PUT_FD(), slot, what, buf, 0, offset);
    }

    /** The u32 at {@code buf + offset} ← the task's pid (in its own pid namespace). */
    public PlanProgram putPid(PlanBuffer buf, long offset) {
        return step(gpu_plan_h.GPU_PLAN_PUT_PID(), -1, "put the task's pid", buf, 0, offset);
    }

    /**
     * Sends {@code message}, then the fds stored as u32 at {@code fdBuf + fdOffsets[i]}, on the socket criu's fdstore
     * keeps as {@code fdstoreId}.
     */
    public PlanProgram sendFds(int fdstoreId, PlanBuffer message, PlanBuffer fdBuf, long[] fdOffsets, String what) {
        steps.add(new Step(gpu_plan_h.GPU_PLAN_SEND_FDS(), -1, what, message, fdstoreId, fdOffsets.length, fdBuf,
                fdOffsets.clone()));
        return this;
    }

    public PlanProgram enableVmas(int first, int count) {
        if (count == 0) return this;
        return step(gpu_plan_h.GPU_PLAN_ENABLE_VMAS(), -1, "enable mappings", null, first, count);
    }

    /** Ends the program: criu gets the slot's fd. */
    public PlanProgram handOver(int slot, String what) {
        return step(gpu_plan_h.GPU_PLAN_RETURN(), slot, what, null, 0, 0);
    }

    /** Ends the program: criu gets a dup of the slot's fd, which stays open for the task. */
    public PlanProgram handOverDup(int slot, String what) {
        return step(gpu_plan_h.GPU_PLAN_RETURN_DUP(), slot, what, null, 0, 0);
    }

    PlanMemory.Program rows() {
        return new PlanMemory.Program(fileId, List.copyOf(steps));
    }
}

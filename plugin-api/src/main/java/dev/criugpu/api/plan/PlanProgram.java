package dev.criugpu.api.plan;

import dev.criugpu.api.bindings.gpu_plan_h;
import dev.criugpu.api.bindings.gpu_plan_step;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One program of a {@link ChildPlan}: what RESTORE_EXT_FILE(file id) runs in a restored task (struct
 * gpu_plan_program's steps, see native/plan/gpu_plan.h), in native memory of the plan's arena. Vendor-neutral: the
 * caller supplies paths, ioctl numbers, buffers and offsets. Made by {@link ChildPlan#program}.
 */
public final class PlanProgram {
    private final Arena arena;
    private final int fileId;
    private final List<Consumer<MemorySegment>> steps = new ArrayList<>();

    PlanProgram(Arena arena, int fileId) {
        this.arena = arena;
        this.fileId = fileId;
    }

    public int fileId() {
        return fileId;
    }

    private PlanProgram step(int op, int slot, String what, Consumer<MemorySegment> fill) {
        MemorySegment name = arena.allocateFrom(what);
        steps.add(s -> {
            gpu_plan_step.op(s, op);
            gpu_plan_step.slot(s, slot);
            gpu_plan_step.what(s, name);
            fill.accept(s);
        });
        return this;
    }

    /** slot ← open(path, flags) unless open; {@code high}: above the task's image fds. */
    public PlanProgram open(int slot, String path, int flags, boolean high) {
        MemorySegment p = arena.allocateFrom(path);
        return step(gpu_plan_h.GPU_PLAN_OPEN(), slot, "open " + path, s -> {
            gpu_plan_step.buf(s, p);
            gpu_plan_step.arg(s, Integer.toUnsignedLong(flags));
            gpu_plan_step.arg2(s, high ? 1 : 0);
        });
    }

    public PlanProgram ioctl(int slot, int request, MemorySegment arg, String what) {
        return step(gpu_plan_h.GPU_PLAN_IOCTL(), slot, what, s -> {
            gpu_plan_step.buf(s, arg);
            gpu_plan_step.arg(s, Integer.toUnsignedLong(request));
        });
    }

    /** The u32 at {@code buf + offset} must lie in [low, high] (unsigned), else the program fails with {@code what}. */
    public PlanProgram require(MemorySegment buf, long offset, int low, int high, String what) {
        return step(gpu_plan_h.GPU_PLAN_REQUIRE(), -1, what, s -> {
            gpu_plan_step.buf(s, buf);
            gpu_plan_step.arg(s, Integer.toUnsignedLong(low) | (Integer.toUnsignedLong(high) << 32));
            gpu_plan_step.arg2(s, offset);
        });
    }

    /** The u32 at {@code buf + offset} ← slot's fd. */
    public PlanProgram putFd(int slot, MemorySegment buf, long offset, String what) {
        return step(gpu_plan_h.GPU_PLAN_PUT_FD(), slot, what, s -> {
            gpu_plan_step.buf(s, buf);
            gpu_plan_step.arg2(s, offset);
        });
    }

    /** The u32 at {@code buf + offset} ← the task's pid (in its own pid namespace). */
    public PlanProgram putPid(MemorySegment buf, long offset) {
        return step(gpu_plan_h.GPU_PLAN_PUT_PID(), -1, "put the task's pid", s -> {
            gpu_plan_step.buf(s, buf);
            gpu_plan_step.arg2(s, offset);
        });
    }

    /**
     * Sends {@code message}, then the fds stored as u32 at {@code fdBuf + fdOffsets[i]}, on the socket criu's fdstore
     * keeps as {@code fdstoreId}.
     */
    public PlanProgram sendFds(int fdstoreId, MemorySegment message, MemorySegment fdBuf, long[] fdOffsets, String what) {
        MemorySegment offsets = arena.allocateFrom(JAVA_LONG, fdOffsets.length == 0 ? new long[1] : fdOffsets);
        return step(gpu_plan_h.GPU_PLAN_SEND_FDS(), -1, what, s -> {
            gpu_plan_step.arg(s, fdstoreId);
            gpu_plan_step.buf(s, message);
            gpu_plan_step.len(s, message.byteSize());
            gpu_plan_step.fd_buf(s, fdBuf);
            gpu_plan_step.fd_offsets(s, offsets);
            gpu_plan_step.arg2(s, fdOffsets.length);
        });
    }

    public PlanProgram enableVmas(int first, int count) {
        if (count == 0) return this;
        return step(gpu_plan_h.GPU_PLAN_ENABLE_VMAS(), -1, "enable mappings", s -> {
            gpu_plan_step.arg(s, first);
            gpu_plan_step.arg2(s, count);
        });
    }

    /** Ends the program: criu gets the slot's fd. */
    public PlanProgram handOver(int slot, String what) {
        return step(gpu_plan_h.GPU_PLAN_RETURN(), slot, what, s -> { });
    }

    /** Ends the program: criu gets a dup of the slot's fd, which stays open for the task. */
    public PlanProgram handOverDup(int slot, String what) {
        return step(gpu_plan_h.GPU_PLAN_RETURN_DUP(), slot, what, s -> { });
    }

    /** The steps as a native array; its length is {@link #size()}. */
    MemorySegment steps() {
        MemorySegment array = gpu_plan_step.allocateArray(Math.max(1, steps.size()), arena);
        for (int i = 0; i < steps.size(); i++) steps.get(i).accept(gpu_plan_step.asSlice(array, i));
        return array;
    }

    int size() {
        return steps.size();
    }
}

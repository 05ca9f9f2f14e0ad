package dev.criugpu.api.sys;

import java.lang.foreign.MemorySegment;

/**
 * The functions the plan executor calls in a restored task (struct gpu_plan_seam): libc's open, close and ioctl and
 * criu's find_unused_fd_pid, print_on_level and fdstore_get in production; a simulator's in tests.
 */
public record PlanCalls(MemorySegment open, MemorySegment close, MemorySegment ioctl, MemorySegment findUnusedFd,
                        MemorySegment log, MemorySegment fdstoreGet) {
    public PlanCalls {
        for (MemorySegment f : new MemorySegment[] {open, close, ioctl, findUnusedFd, log, fdstoreGet}) {
            if (f == null || f.equals(MemorySegment.NULL)) {
                throw new IllegalArgumentException("the plan executor needs every call of struct gpu_plan_seam");
            }
        }
    }
}

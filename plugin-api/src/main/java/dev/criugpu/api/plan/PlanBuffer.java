package dev.criugpu.api.plan;

/**
 * A buffer in a {@link ChildPlan}'s native memory (ioctl arguments, messages, results an ioctl leaves): it lives as
 * long as the plan and every restored task inherits it. Made by {@link ChildPlan#allocate} or
 * {@link ChildPlan#copyOf}; a vendor's layout facade (its {@code sys} package) fills it through
 * {@link dev.criugpu.api.sys.PlanMemory#segment}.
 */
public interface PlanBuffer {
    long byteSize();

    /** {@code size} bytes from {@code offset} of this buffer. */
    PlanBuffer slice(long offset, long size);
}

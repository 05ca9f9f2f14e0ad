package dev.criugpu.api.sys;

import dev.criugpu.api.bindings.gpu_plan;
import dev.criugpu.api.bindings.gpu_plan_child;
import dev.criugpu.api.bindings.gpu_plan_h;
import dev.criugpu.api.bindings.gpu_plan_path;
import dev.criugpu.api.bindings.gpu_plan_program;
import dev.criugpu.api.bindings.gpu_plan_seam;
import dev.criugpu.api.bindings.gpu_plan_step;
import dev.criugpu.api.bindings.gpu_plan_vma;
import dev.criugpu.api.plan.PlanBuffer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.util.List;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The native side of a {@link dev.criugpu.api.plan.ChildPlan}: the shared arena its buffers live in, and the writer
 * of {@code struct gpu_plan} (native/plan/gpu_plan.h) from the plan's Java rows. The plan package speaks Java types;
 * this class and the vendors' layout facades are the only ones that see the segments.
 */
public final class PlanMemory implements AutoCloseable {
    /** A plan buffer: a segment of the plan's arena. */
    private record Buffer(MemorySegment segment) implements PlanBuffer {
        @Override
        public long byteSize() {
            return segment.byteSize();
        }

        @Override
        public PlanBuffer slice(long offset, long size) {
            return new Buffer(segment.asSlice(offset, size));
        }
    }

    /**
     * One step of a program (struct gpu_plan_step); {@code buf} and {@code fdBuf} may be null. The lengths the
     * executor checks every offset against are the buffers' own sizes, set when the step is written.
     */
    public record Step(int op, int slot, String what, PlanBuffer buf, long arg, long arg2, PlanBuffer fdBuf,
                       long[] fdOffsets) {
    }

    public record Program(int fileId, List<Step> steps) {
    }

    public record Mapping(long addr, long oldOffset, PlanBuffer newOffset, int slot) {
    }

    public record PathClaim(String pattern, boolean prefix, boolean reopen, String substitute) {
    }

    /** What fills a buffer's guard bytes. */
    public static final byte GUARD = (byte) 0xa5;

    /**
     * Where plans are written in this process when criu's children must see a plan written after criu forked them:
     * memory the shim mapped shared before the fork (a restore's JVM starts at POST_FORKING, DESIGN rule 1). Plans
     * written there are never freed: criu's command ends with the restore.
     */
    private static volatile SegmentAllocator sharedWithChildren;

    /** Every plan written from now on goes to {@code region}, which criu's forked children share (the shim's). */
    public static synchronized void shareWithChildren(MemorySegment region) {
        if (sharedWithChildren != null) return; // a second plugin's region: the first one's is shared as well
        SegmentAllocator slices = SegmentAllocator.slicingAllocator(region);
        sharedWithChildren = (size, align) -> {
            synchronized (PlanMemory.class) {
                try {
                    return slices.allocate(size, align);
                } catch (IndexOutOfBoundsException e) {
                    throw new IllegalStateException("the plan needs more than the " + region.byteSize()
                            + " bytes the shim shares with criu's children", e);
                }
            }
        };
    }

    private final Arena arena = Arena.ofShared();
    private final SegmentAllocator alloc;
    private final int guardBytes;
    private MemorySegment plan;

    public PlanMemory() {
        this(0);
    }

    /**
     * Every buffer followed by {@code guardBytes} bytes of {@link #GUARD} that belong to no buffer: a test of the
     * executor reads them back to see that no step wrote past its buffer.
     */
    public PlanMemory(int guardBytes) {
        if (guardBytes < 0) throw new IllegalArgumentException("guard bytes " + guardBytes);
        this.guardBytes = guardBytes;
        SegmentAllocator shared = sharedWithChildren;
        this.alloc = shared != null ? shared : arena;
    }

    /** The segment behind a buffer of a plan, for a layout facade that fills it with a vendor's structs. */
    public static MemorySegment segment(PlanBuffer buffer) {
        return ((Buffer) buffer).segment();
    }

    /** {@code bytes} zeroed bytes, aligned for any C scalar (and the guard bytes after them). */
    public PlanBuffer allocate(long bytes) {
        MemorySegment s = alloc.allocate(Math.max(1, bytes + guardBytes), 8);
        s.asSlice(bytes).fill(GUARD);
        return new Buffer(s.asSlice(0, bytes));
    }

    public PlanBuffer copyOf(byte[] bytes) {
        PlanBuffer b = allocate(bytes.length);
        MemorySegment.copy(bytes, 0, segment(b), JAVA_BYTE, 0, bytes.length);
        return b;
    }

    /** Writes {@code struct gpu_plan}; the rows must not change afterwards. */
    public void write(String name, int slots, List<Program> programs, List<Mapping> mappings, List<PathClaim> paths) {
        if (plan != null) throw new IllegalStateException("the " + name + " plan is written already");
        MemorySegment p = gpu_plan.allocate(alloc);
        gpu_plan.version(p, gpu_plan_h.GPU_PLAN_VERSION());
        gpu_plan.name(p, alloc.allocateFrom(name));

        MemorySegment progs = gpu_plan_program.allocateArray(Math.max(1, programs.size()), alloc);
        for (int i = 0; i < programs.size(); i++) {
            MemorySegment s = gpu_plan_program.asSlice(progs, i);
            gpu_plan_program.file_id(s, programs.get(i).fileId());
            gpu_plan_program.num_steps(s, programs.get(i).steps().size());
            gpu_plan_program.steps(s, steps(programs.get(i).steps()));
        }
        gpu_plan.num_programs(p, programs.size());
        gpu_plan.programs(p, progs);

        MemorySegment rows = gpu_plan_vma.allocateArray(Math.max(1, mappings.size()), alloc);
        for (int i = 0; i < mappings.size(); i++) {
            MemorySegment r = gpu_plan_vma.asSlice(rows, i);
            gpu_plan_vma.addr(r, mappings.get(i).addr());
            gpu_plan_vma.old_offset(r, mappings.get(i).oldOffset());
            gpu_plan_vma.new_offset(r, segment(mappings.get(i).newOffset()));
            gpu_plan_vma.slot(r, mappings.get(i).slot());
        }
        gpu_plan.num_vmas(p, mappings.size());
        gpu_plan.vmas(p, rows);

        MemorySegment claims = gpu_plan_path.allocateArray(Math.max(1, paths.size()), alloc);
        for (int i = 0; i < paths.size(); i++) {
            MemorySegment c = gpu_plan_path.asSlice(claims, i);
            gpu_plan_path.pattern(c, alloc.allocateFrom(paths.get(i).pattern()));
            gpu_plan_path.prefix(c, paths.get(i).prefix() ? 1 : 0);
            gpu_plan_path.reopen(c, paths.get(i).reopen() ? 1 : 0);
            String sub = paths.get(i).substitute();
            gpu_plan_path.substitute(c, sub == null ? MemorySegment.NULL : alloc.allocateFrom(sub));
        }
        gpu_plan.num_paths(p, paths.size());
        gpu_plan.paths(p, claims);
        gpu_plan.num_slots(p, slots);
        plan = p;
    }

    private MemorySegment steps(List<Step> steps) {
        MemorySegment array = gpu_plan_step.allocateArray(Math.max(1, steps.size()), alloc);
        for (int i = 0; i < steps.size(); i++) {
            Step st = steps.get(i);
            MemorySegment s = gpu_plan_step.asSlice(array, i);
            gpu_plan_step.op(s, st.op());
            gpu_plan_step.slot(s, st.slot());
            gpu_plan_step.what(s, alloc.allocateFrom(st.what()));
            if (st.buf() != null) {
                gpu_plan_step.buf(s, segment(st.buf()));
                gpu_plan_step.len(s, st.buf().byteSize());
            }
            gpu_plan_step.arg(s, st.arg());
            gpu_plan_step.arg2(s, st.arg2());
            if (st.fdBuf() != null) {
                gpu_plan_step.fd_buf(s, segment(st.fdBuf()));
                gpu_plan_step.fd_len(s, st.fdBuf().byteSize());
            }
            if (st.fdOffsets() != null) {
                long[] o = st.fdOffsets();
                gpu_plan_step.fd_offsets(s, alloc.allocateFrom(JAVA_LONG, o.length == 0 ? new long[1] : o));
            }
        }
        return array;
    }

    /** The plan ({@code struct gpu_plan}), once {@link #write written}. */
    public MemorySegment address() {
        if (plan == null) throw new IllegalStateException("the plan is not written yet");
        return plan;
    }

    /**
     * What the shim hands the executor in a restored task ({@code struct gpu_plan_child}): this plan and the calls
     * the executor makes there.
     */
    public MemorySegment context(PlanCalls calls) {
        MemorySegment seam = gpu_plan_seam.allocate(alloc);
        gpu_plan_seam.open(seam, calls.open());
        gpu_plan_seam.close(seam, calls.close());
        gpu_plan_seam.ioctl(seam, calls.ioctl());
        gpu_plan_seam.find_unused_fd(seam, calls.findUnusedFd());
        gpu_plan_seam.log(seam, calls.log());
        gpu_plan_seam.fdstore_get(seam, calls.fdstoreGet());
        MemorySegment ctx = gpu_plan_child.allocate(alloc);
        gpu_plan_child.plan(ctx, address());
        gpu_plan_child.seam(ctx, seam);
        return ctx;
    }

    @Override
    public void close() {
        arena.close();
    }
}

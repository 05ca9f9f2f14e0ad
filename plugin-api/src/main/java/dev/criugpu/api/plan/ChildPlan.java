package dev.criugpu.api.plan;

import dev.criugpu.api.bindings.gpu_plan;
import dev.criugpu.api.bindings.gpu_plan_child;
import dev.criugpu.api.bindings.gpu_plan_h;
import dev.criugpu.api.bindings.gpu_plan_path;
import dev.criugpu.api.bindings.gpu_plan_program;
import dev.criugpu.api.bindings.gpu_plan_seam;
import dev.criugpu.api.bindings.gpu_plan_vma;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * What a plugin has criu's forked children do for RESTORE_EXT_FILE and UPDATE_VMA_MAP, where no Java runs (DESIGN
 * rule 1): a program per file id ({@link PlanProgram}), the fd slots the programs share within a task, the device
 * mappings whose offsets a program's ioctl moves, and the paths whose mappings the plan answers for. Built in
 * criu's main process before it forks, in native memory every restored task inherits, and run there by the C
 * executor linked into the shim ({@code native/plan/gpu_plan.c}). Hand it over with
 * {@link dev.criugpu.api.CriuServices#setChildExecutor}; it must stay open until the restore ends.
 */
public final class ChildPlan implements AutoCloseable {
    private record Mapping(long addr, long oldOffset, MemorySegment newOffset, int slot) {
    }

    private record PathClaim(String pattern, boolean prefix, boolean reopen, String substitute) {
    }

    private final Arena arena = Arena.ofShared();
    private final String name;
    private final List<PlanProgram> programs = new ArrayList<>();
    private final List<Mapping> mappings = new ArrayList<>();
    private final List<PathClaim> paths = new ArrayList<>();
    private int slots;
    private MemorySegment sealed;

    /** {@code name} prefixes the executor's log lines, e.g. {@code amdgpu}. */
    public ChildPlan(String name) {
        this.name = name;
    }

    /** Where the plan's buffers (ioctl arguments, messages) live: as long as the plan, inherited by every task. */
    public Arena arena() {
        return arena;
    }

    /** A new fd slot; a slot holds one fd per task, shared by the programs that task runs. */
    public int newSlot() {
        checkOpen();
        return slots++;
    }

    /** The program RESTORE_EXT_FILE({@code fileId}) runs. */
    public PlanProgram program(int fileId) {
        checkOpen();
        PlanProgram p = new PlanProgram(arena, fileId);
        programs.add(p);
        return p;
    }

    /**
     * A mapping at {@code addr} of file offset {@code oldOffset} moves to the offset an ioctl leaves at
     * {@code newOffset} (8 bytes of a plan buffer), mapped through a dup of {@code slot}'s fd; it takes effect once a
     * program's {@link PlanProgram#enableVmas} step covers its row. Returns the row.
     */
    public int addMapping(long addr, long oldOffset, MemorySegment newOffset, int slot) {
        checkOpen();
        mappings.add(new Mapping(addr, oldOffset, newOffset, slot));
        return mappings.size() - 1;
    }

    /** The number of mapping rows so far (the next row's index). */
    public int mappingCount() {
        return mappings.size();
    }

    /**
     * UPDATE_VMA_MAP of a path equal to {@code pattern} (or starting with it, for a {@code prefix}) is this plan's;
     * with {@code reopen}, criu reopens the path itself rather than mapping through the slot's fd.
     */
    public void claimPath(String pattern, boolean prefix, boolean reopen) {
        checkOpen();
        paths.add(new PathClaim(pattern, prefix, reopen, null));
    }

    /**
     * Every mapping of a path equal to {@code pattern} (or starting with it, for a {@code prefix}) is mapped, in any
     * restored task, through a fresh open of {@code substitute} at offset 0: the address range stays taken by an
     * inert stand-in (e.g. {@code /dev/zero}) instead of the device.
     */
    public void substitutePath(String pattern, boolean prefix, String substitute) {
        checkOpen();
        paths.add(new PathClaim(pattern, prefix, false, substitute));
    }

    /** The plan ({@code struct gpu_plan}); nothing can be added after the first call. */
    public synchronized MemorySegment address() {
        if (sealed == null) sealed = seal();
        return sealed;
    }

    /**
     * What the shim hands the executor in a restored task ({@code struct gpu_plan_child}): this plan and the calls
     * the executor makes there.
     */
    public MemorySegment context(PlanCalls calls) {
        MemorySegment seam = gpu_plan_seam.allocate(arena);
        gpu_plan_seam.open(seam, calls.open());
        gpu_plan_seam.close(seam, calls.close());
        gpu_plan_seam.ioctl(seam, calls.ioctl());
        gpu_plan_seam.find_unused_fd(seam, calls.findUnusedFd());
        gpu_plan_seam.log(seam, calls.log());
        gpu_plan_seam.fdstore_get(seam, calls.fdstoreGet());
        MemorySegment ctx = gpu_plan_child.allocate(arena);
        gpu_plan_child.plan(ctx, address());
        gpu_plan_child.seam(ctx, seam);
        return ctx;
    }

    private void checkOpen() {
        if (sealed != null) throw new IllegalStateException("the " + name + " plan is built already");
    }

    private MemorySegment seal() {
        MemorySegment plan = gpu_plan.allocate(arena);
        gpu_plan.version(plan, gpu_plan_h.GPU_PLAN_VERSION());
        gpu_plan.name(plan, arena.allocateFrom(name));

        MemorySegment progs = gpu_plan_program.allocateArray(Math.max(1, programs.size()), arena);
        for (int i = 0; i < programs.size(); i++) {
            MemorySegment s = gpu_plan_program.asSlice(progs, i);
            gpu_plan_program.file_id(s, programs.get(i).fileId());
            gpu_plan_program.num_steps(s, programs.get(i).size());
            gpu_plan_program.steps(s, programs.get(i).steps());
        }
        gpu_plan.num_programs(plan, programs.size());
        gpu_plan.programs(plan, progs);

        MemorySegment rows = gpu_plan_vma.allocateArray(Math.max(1, mappings.size()), arena);
        for (int i = 0; i < mappings.size(); i++) {
            MemorySegment r = gpu_plan_vma.asSlice(rows, i);
            gpu_plan_vma.addr(r, mappings.get(i).addr());
            gpu_plan_vma.old_offset(r, mappings.get(i).oldOffset());
            gpu_plan_vma.new_offset(r, mappings.get(i).newOffset());
            gpu_plan_vma.slot(r, mappings.get(i).slot());
        }
        gpu_plan.num_vmas(plan, mappings.size());
        gpu_plan.vmas(plan, rows);

        MemorySegment claims = gpu_plan_path.allocateArray(Math.max(1, paths.size()), arena);
        for (int i = 0; i < paths.size(); i++) {
            MemorySegment c = gpu_plan_path.asSlice(claims, i);
            gpu_plan_path.pattern(c, arena.allocateFrom(paths.get(i).pattern()));
            gpu_plan_path.prefix(c, paths.get(i).prefix() ? 1 : 0);
            gpu_plan_path.reopen(c, paths.get(i).reopen() ? 1 : 0);
            String sub = paths.get(i).substitute();
            gpu_plan_path.substitute(c, sub == null ? MemorySegment.NULL : arena.allocateFrom(sub));
        }
        gpu_plan.num_paths(plan, paths.size());
        gpu_plan.paths(plan, claims);
        gpu_plan.num_slots(plan, slots);
        return plan;
    }

    @Override
    public void close() {
        arena.close();
    }
}

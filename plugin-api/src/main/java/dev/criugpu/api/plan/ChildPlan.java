package dev.criugpu.api.plan;

import dev.criugpu.api.sys.PlanMemory;
import dev.criugpu.api.sys.PlanMemory.Mapping;
import dev.criugpu.api.sys.PlanMemory.PathClaim;

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
    private final PlanMemory memory;
    private final String name;
    private final List<PlanProgram> programs = new ArrayList<>();
    private final List<Mapping> mappings = new ArrayList<>();
    private final List<PathClaim> paths = new ArrayList<>();
    private int slots;
    private boolean sealed;

    /** {@code name} prefixes the executor's log lines, e.g. {@code amdgpu}. */
    public ChildPlan(String name) {
        this(name, 0);
    }

    /**
     * With {@code guardBytes} bytes of {@link PlanMemory#GUARD} after every buffer, outside it: for a test that
     * checks the executor writes no byte past a step's buffer.
     */
    public ChildPlan(String name, int guardBytes) {
        this.name = name;
        this.memory = new PlanMemory(guardBytes);
    }

    /** A zeroed buffer of {@code bytes} for ioctl arguments, messages and results: as long as the plan, inherited by every task. */
    public PlanBuffer allocate(long bytes) {
        checkOpen();
        return memory.allocate(bytes);
    }

    /** A plan buffer holding {@code bytes}. */
    public PlanBuffer copyOf(byte[] bytes) {
        checkOpen();
        return memory.copyOf(bytes);
    }

    /** A new fd slot; a slot holds one fd per task, shared by the programs that task runs. */
    public int newSlot() {
        checkOpen();
        return slots++;
    }

    /** The program RESTORE_EXT_FILE({@code fileId}) runs. */
    public PlanProgram program(int fileId) {
        checkOpen();
        PlanProgram p = new PlanProgram(memory, fileId);
        programs.add(p);
        return p;
    }

    /**
     * A mapping at {@code addr} of file offset {@code oldOffset} moves to the offset an ioctl leaves at
     * {@code newOffset} (8 bytes of a plan buffer), mapped through a dup of {@code slot}'s fd; it takes effect once a
     * program's {@link PlanProgram#enableVmas} step covers its row. Returns the row.
     */
    public int addMapping(long addr, long oldOffset, PlanBuffer newOffset, int slot) {
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

    /**
     * The plan in native memory ({@code struct gpu_plan}, for the shim's executor); nothing can be added after the
     * first call.
     */
    public synchronized PlanMemory sealed() {
        if (!sealed) {
            memory.write(name, slots, programs.stream().map(PlanProgram::rows).toList(), mappings, paths);
            sealed = true;
        }
        return memory;
    }

    private void checkOpen() {
        if (sealed) throw new IllegalStateException("the " + name + " plan is built already");
    }

    @Override
    public void close() {
        memory.close();
    }
}

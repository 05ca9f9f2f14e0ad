package dev.criugpu.api.plan;

import dev.criugpu.api.bindings.gpu_plan;
import dev.criugpu.api.bindings.gpu_plan_h;
import dev.criugpu.api.bindings.gpu_plan_program;
import dev.criugpu.api.bindings.gpu_plan_step;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A fuzz test's hold on a sealed plan in native memory ({@code struct gpu_plan}, native/plan/gpu_plan.h): the
 * numbers of its steps mutated in place, as a plan built from mutated images could hold them, and put back; and
 * the memory its steps may write, with the guard bytes after each buffer ({@link ChildPlan#ChildPlan(String, int)}),
 * for comparing before and after a run. Pointers are never mutated: the plan is memory Java built, only its numbers
 * come from images. A buffer's length and the lengths of Java's own arrays (a step's fd offsets, a program's steps,
 * the mapping rows) only shrink: a larger one would misstate memory the plan itself owns, which no check of the
 * executor can see.
 */
public final class PlanMutations {
    /** {@code len} bytes at {@code addr}. */
    public record Range(long addr, long len) {
        long end() {
            return addr + len;
        }
    }

    private record Saved(MemorySegment at, byte[] bytes) {
    }

    private final MemorySegment plan;
    private final List<MemorySegment> programs = new ArrayList<>();
    private final List<MemorySegment> steps = new ArrayList<>();
    private final List<MemorySegment> fdOffsets = new ArrayList<>(); // per step; NULL where it has none
    private final List<Saved> saved = new ArrayList<>();
    private final List<Range> watched;
    private final List<Range> deviceWritten = new ArrayList<>();

    /** The plan at {@code address} (its {@link dev.criugpu.api.sys.PlanMemory#address}), built with {@code guard} guard bytes. */
    public PlanMutations(MemorySegment address, int guard) {
        plan = address.reinterpret(gpu_plan.sizeof());
        save(plan);
        MemorySegment progs = gpu_plan.programs(plan).reinterpret(gpu_plan_program.sizeof() * gpu_plan.num_programs(plan));
        List<Range> watch = new ArrayList<>();
        for (int p = 0; p < gpu_plan.num_programs(plan); p++) {
            MemorySegment prog = gpu_plan_program.asSlice(progs, p);
            programs.add(prog);
            save(prog);
            int n = gpu_plan_program.num_steps(prog);
            MemorySegment array = gpu_plan_program.steps(prog).reinterpret(gpu_plan_step.sizeof() * n);
            save(array);
            for (int i = 0; i < n; i++) {
                MemorySegment s = gpu_plan_step.asSlice(array, i);
                steps.add(s);
                MemorySegment offsets = gpu_plan_step.fd_offsets(s);
                if (!offsets.equals(MemorySegment.NULL)) {
                    offsets = offsets.reinterpret(8 * gpu_plan_step.arg2(s));
                    save(offsets);
                }
                fdOffsets.add(offsets);
                MemorySegment buf = gpu_plan_step.buf(s);
                if (!buf.equals(MemorySegment.NULL)) watch.add(new Range(buf.address(), gpu_plan_step.len(s) + guard));
                MemorySegment fdBuf = gpu_plan_step.fd_buf(s);
                if (!fdBuf.equals(MemorySegment.NULL)) {
                    watch.add(new Range(fdBuf.address(), gpu_plan_step.fd_len(s) + guard));
                    deviceWritten.add(new Range(fdBuf.address(), gpu_plan_step.fd_len(s)));
                }
            }
        }
        watched = merged(watch);
    }

    private void save(MemorySegment s) {
        saved.add(new Saved(s, s.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
    }

    private static List<Range> merged(List<Range> in) {
        List<Range> sorted = new ArrayList<>(in);
        sorted.sort(Comparator.comparingLong(Range::addr));
        List<Range> out = new ArrayList<>();
        for (Range r : sorted) {
            Range last = out.isEmpty() ? null : out.getLast();
            if (last != null && r.addr() <= last.end()) {
                out.set(out.size() - 1, new Range(last.addr(), Math.max(last.end(), r.end()) - last.addr()));
            } else {
                out.add(r);
            }
        }
        return out;
    }

    /** Puts every number back as the plan was built. */
    public void restore() {
        for (Saved s : saved) MemorySegment.copy(MemorySegment.ofArray(s.bytes()), 0, s.at(), 0, s.bytes().length);
    }

    /** Step {@code index} of program {@code program}, as {@code struct gpu_plan_step}. */
    public MemorySegment step(int program, int index) {
        MemorySegment prog = programs.get(program);
        return gpu_plan_program.steps(prog).reinterpret(gpu_plan_step.sizeof() * gpu_plan_program.num_steps(prog))
                .asSlice(index * gpu_plan_step.sizeof(), gpu_plan_step.sizeof());
    }

    public MemorySegment program(int program) {
        return programs.get(program);
    }

    /** The buffers of every step with their guard bytes, as the plan was built: what a run is compared over. */
    public List<Range> watched() {
        return watched;
    }

    /**
     * What a run may write now: each step's {@code [buf, buf + len)} as it stands (mutated), and the fd buffers as
     * built (a device writes them through pointers in its ioctl's arguments, which no step's numbers describe).
     */
    public List<Range> allowed() {
        List<Range> out = new ArrayList<>(deviceWritten);
        for (MemorySegment s : steps) {
            MemorySegment buf = gpu_plan_step.buf(s);
            if (!buf.equals(MemorySegment.NULL)) out.add(new Range(buf.address(), gpu_plan_step.len(s)));
        }
        return merged(out);
    }

    /** Cuts a random program short (the steps from some index on are gone); returns what it did. */
    public String truncate(Random r) {
        int p = r.nextInt(programs.size());
        int n = gpu_plan_program.num_steps(programs.get(p));
        int keep = r.nextInt(n);
        gpu_plan_program.num_steps(programs.get(p), keep);
        return "program " + p + " has " + keep + " of " + n + " steps";
    }

    /** One to three mutations of numbers of steps or of the plan's counts; returns what they did. */
    public List<String> mutate(Random r) {
        List<String> done = new ArrayList<>();
        for (int k = 1 + r.nextInt(3); k > 0; k--) {
            int which = r.nextInt(12);
            if (which == 0) {
                done.add(truncate(r));
            } else if (which == 1) {
                int slots = gpu_plan.num_slots(plan);
                int vmas = gpu_plan.num_vmas(plan);
                if (r.nextBoolean()) gpu_plan.num_slots(plan, r.nextInt(slots + 1));
                else gpu_plan.num_vmas(plan, r.nextInt(vmas + 1));
                done.add("plan has " + gpu_plan.num_slots(plan) + " slots, " + gpu_plan.num_vmas(plan) + " mapping rows");
            } else {
                int i = r.nextInt(steps.size());
                done.add("step " + i + " " + mutateStep(i, r));
            }
        }
        return done;
    }

    private String mutateStep(int i, Random r) {
        MemorySegment s = steps.get(i);
        long len = gpu_plan_step.len(s);
        switch (r.nextInt(7)) {
            case 0 -> gpu_plan_step.op(s, r.nextBoolean() ? r.nextInt(12) : r.nextInt());
            case 1 -> {
                int slots = gpu_plan.num_slots(plan);
                int[] pick = {-1, slots, slots + 1, Integer.MIN_VALUE, Integer.MAX_VALUE, r.nextInt(slots + 2), r.nextInt()};
                gpu_plan_step.slot(s, pick[r.nextInt(pick.length)]);
            }
            case 2 -> {
                long arg = gpu_plan_step.arg(s);
                if (gpu_plan_step.op(s) == gpu_plan_h.GPU_PLAN_IOCTL() && r.nextBoolean()) {
                    // another size in the request's size field (bits 16-29), or bits above the 32 of a request
                    arg = r.nextBoolean() ? (arg & ~(0x3fffL << 16)) | ((long) r.nextInt(0x4000) << 16)
                            : arg | (1L << (32 + r.nextInt(32)));
                } else {
                    arg = interesting(r, len);
                }
                gpu_plan_step.arg(s, arg);
            }
            case 3 -> {
                long arg2 = gpu_plan_step.arg2(s);
                boolean count = !fdOffsets.get(i).equals(MemorySegment.NULL);
                // a SEND_FDS step's arg2 is the length of its fd offsets array
                gpu_plan_step.arg2(s, count ? (arg2 == 0 ? 0 : r.nextLong(arg2 + 1)) : interesting(r, len));
            }
            case 4 -> gpu_plan_step.len(s, len == 0 ? 0 : shrink(r, len));
            case 5 -> {
                long fdLen = gpu_plan_step.fd_len(s);
                gpu_plan_step.fd_len(s, fdLen == 0 ? 0 : shrink(r, fdLen));
            }
            default -> {
                MemorySegment offsets = fdOffsets.get(i);
                long n = offsets.byteSize() / 8;
                if (n == 0) {
                    gpu_plan_step.arg2(s, interesting(r, len));
                } else {
                    offsets.setAtIndex(JAVA_LONG, r.nextLong(n), interesting(r, gpu_plan_step.fd_len(s)));
                }
            }
        }
        return String.format("op %d slot %d arg 0x%x arg2 0x%x len %d fd_len %d", gpu_plan_step.op(s),
                gpu_plan_step.slot(s), gpu_plan_step.arg(s), gpu_plan_step.arg2(s), gpu_plan_step.len(s),
                gpu_plan_step.fd_len(s));
    }

    private static long shrink(Random r, long len) {
        return switch (r.nextInt(3)) {
            case 0 -> len - 1;
            case 1 -> 0;
            default -> r.nextLong(len);
        };
    }

    /** Offsets and counts at and around the edges of a {@code len}-byte buffer, and far outside it. */
    private static long interesting(Random r, long len) {
        long[] pick = {len - 4, len - 3, len - 1, len, len + 1, len + 4, -1L, -4L, Long.MIN_VALUE, Long.MAX_VALUE,
                1L << 32, r.nextInt(64), r.nextLong()};
        return pick[r.nextInt(pick.length)];
    }
}

package dev.criugpu.amdgpu.restore;

import dev.criugpu.amdgpu.bindings.kfd_ioctl_h;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.amdgpu.testing.FuzzedTask;
import dev.criugpu.amdgpu.testing.KfdSimulator;
import dev.criugpu.amdgpu.testing.SimulatedHost;
import dev.criugpu.api.bindings.gpu_plan_h;
import dev.criugpu.api.bindings.gpu_plan_program;
import dev.criugpu.api.bindings.gpu_plan_step;
import dev.criugpu.api.plan.ChildPlan;
import dev.criugpu.api.plan.PlanBuffer;
import dev.criugpu.api.plan.PlanMutations;
import dev.criugpu.api.plan.PlanProgram;
import dev.criugpu.api.sys.Syscalls;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * Each check the plan executor makes before a step touches memory (native/plan/gpu_plan.c): a step whose numbers
 * do not fit its buffers is refused with one line naming the plan, the file id, the step and the reason, the
 * program fails with -EINVAL, and no byte of any buffer of the plan (nor the guard bytes after it) changed. Each
 * plan runs in a forked task over the simulated KFD ({@link FuzzedTask}).
 */
class PlanStepChecksTest {
    private static final int FILE = 3;
    private static final int EINVAL = 22;
    private static final int GUARD = 16;
    private static final int RDWR = Syscalls.O_RDWR | Syscalls.O_CLOEXEC;

    private final ChildPlan plan = new ChildPlan("test", GUARD);
    private final PlanProgram program = plan.program(FILE);

    @AfterEach
    void tearDown() {
        plan.close();
        KfdSimulator.reset();
    }

    /** Runs the program, after {@code mutate} changed its steps' numbers in native memory; asserts the refusal. */
    private void assertRefused(String why, Consumer<PlanMutations> mutate, int drainFd) {
        FuzzedTask task = new FuzzedTask(plan);
        PlanMutations m = new PlanMutations(plan.sealed().address(), GUARD);
        mutate.accept(m);
        FuzzedTask.Outcome o = task.run(new int[] {FILE}, m.watched(), List.of(), drainFd);
        assertEquals(0, o.status(), "the task ended normally");
        assertEquals("1 test: file " + FILE + ": " + why + "\n", o.log()[0]);
        assertEquals(1, o.lines()[0], "one line");
        assertEquals(-EINVAL, o.rc()[0]);
        assertEquals(0, o.stray(), "no byte of the plan's buffers changed");
    }

    private void assertRefused(String why) {
        assertRefused(why, m -> { }, -1);
    }

    private PlanBuffer eight() {
        return plan.copyOf(new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
    }

    @ParameterizedTest
    @ValueSource(longs = {5, 8, -2, -4})
    void putFdOutsideItsBuffer(long offset) {
        int slot = plan.newSlot();
        program.open(slot, "/dev/null", RDWR, false).putFd(slot, eight(), offset, "bind the fd").handOver(slot, "hand over");
        assertRefused("bind the fd: the u32 at offset " + Long.toUnsignedString(offset)
                + " lies outside the 8-byte buffer");
    }

    @Test
    void requireOutsideItsBuffer() {
        program.require(eight(), 6, 0, 1, "the value is not 0 or 1");
        assertRefused("the value is not 0 or 1: the u32 at offset 6 lies outside the 8-byte buffer");
    }

    @Test
    void putPidOutsideItsBuffer() {
        program.putPid(eight(), 8);
        assertRefused("put the task's pid: the u32 at offset 8 lies outside the 8-byte buffer");
    }

    @Test
    void aLengthWithoutABuffer() {
        int slot = plan.newSlot();
        program.handOver(slot, "hand over");
        assertRefused("hand over: a buffer of 8 bytes (fd buffer 0) at NULL", m -> {
            MemorySegment s = m.step(0, 0);
            gpu_plan_step.op(s, gpu_plan_h.GPU_PLAN_PUT_PID());
            gpu_plan_step.len(s, 8);
        }, -1);
    }

    @Test
    void anIoctlCopyingMoreThanItsBuffer() {
        int slot = plan.newSlot();
        program.open(slot, "/dev/kfd", RDWR, false)
                .ioctl(slot, kfd_ioctl_h.AMDKFD_IOC_GET_VERSION(), plan.allocate(4), "KFD GET_VERSION");
        assertRefused("KFD GET_VERSION: request 0x80084b01 copies 8 bytes, the buffer has 4");
    }

    @Test
    void anIoctlRequestOfMoreThan32Bits() {
        int slot = plan.newSlot();
        program.open(slot, "/dev/kfd", RDWR, false)
                .ioctl(slot, kfd_ioctl_h.AMDKFD_IOC_GET_VERSION(), plan.allocate(8), "KFD GET_VERSION");
        assertRefused("KFD GET_VERSION: 0x180084b01 is not an ioctl request",
                m -> gpu_plan_step.arg(m.step(0, 1), 0x1_8008_4b01L), -1);
    }

    @Test
    void aPathNotEndingWithinItsBuffer() {
        int slot = plan.newSlot();
        program.open(slot, "/dev/null", RDWR, false).handOver(slot, "hand over");
        assertRefused("open /dev/null: the path does not end within its 9 bytes",
                m -> gpu_plan_step.len(m.step(0, 0), "/dev/null".length()), -1);
    }

    @Test
    void anFdOffsetOutsideTheFdBufferSendsNothing() {
        var host = SimulatedHost.create(Path.of("/nonexistent"), Path.of("/nonexistent"), Map.of());
        int stop = UnixSockets.eventFd();
        try (RefillChannels channels = new RefillChannels(host.fdstore().orElseThrow())) {
            program.sendFds(channels.fdstoreIdFor(FILE), eight(), plan.allocate(8), new long[] {0, 8}, "hand the fds over");
            assertRefused("hand the fds over: fd 1 at offset 8 lies outside the 8-byte fd buffer", m -> { }, -1);
            UnixSockets.signal(stop);
            assertFalse(UnixSockets.pollReadable(channels.mainEnds().get(FILE), stop)[0], "nothing was sent");
        } finally {
            UnixSockets.close(stop);
        }
    }

    @Test
    void fdsWithoutOffsets() {
        program.putPid(eight(), 0);
        assertRefused("put the task's pid: 2 fds but no offsets", m -> {
            gpu_plan_step.op(m.step(0, 0), gpu_plan_h.GPU_PLAN_SEND_FDS());
            gpu_plan_step.arg2(m.step(0, 0), 2);
        }, -1);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, -1, Integer.MIN_VALUE})
    void aSlotThePlanDoesNotHave(int slot) {
        plan.newSlot();
        program.putFd(slot, eight(), 0, "bind the fd");
        assertRefused("bind the fd: slot " + slot + " is not one of the plan's 1");
    }

    @Test
    void anUnknownOp() {
        program.putPid(eight(), 0);
        assertRefused("put the task's pid: unknown op 42", m -> gpu_plan_step.op(m.step(0, 0), 42), -1);
    }

    @Test
    void mappingRowsThePlanDoesNotHave() {
        program.enableVmas(0, 2);
        assertRefused("enable mappings: 2 mapping rows from row 0 are not all among the plan's 0");
    }

    @Test
    void aProgramCutShortOfItsHandOver() {
        int slot = plan.newSlot();
        program.open(slot, "/dev/null", RDWR, false).putPid(eight(), 4).handOver(slot, "hand over");
        FuzzedTask task = new FuzzedTask(plan);
        PlanMutations m = new PlanMutations(plan.sealed().address(), GUARD);
        gpu_plan_program.num_steps(m.program(0), 1);
        FuzzedTask.Outcome o = task.run(new int[] {FILE}, m.watched(), List.of(), -1);
        assertEquals(0, o.status());
        assertEquals("1 test: file 3: the program ended after its 1 steps without handing an fd to criu\n", o.log()[0]);
        assertEquals(1, o.lines()[0]);
        assertEquals(-EINVAL, o.rc()[0]);
        assertEquals(0, o.stray());
    }
}

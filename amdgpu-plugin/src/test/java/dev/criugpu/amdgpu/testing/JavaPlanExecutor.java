package dev.criugpu.amdgpu.testing;

import dev.criugpu.amdgpu.bindings.cmsghdr;
import dev.criugpu.amdgpu.bindings.iovec;
import dev.criugpu.amdgpu.bindings.msghdr;
import dev.criugpu.amdgpu.sys.UnixSockets;
import dev.criugpu.api.bindings.gpu_plan;
import dev.criugpu.api.bindings.gpu_plan_h;
import dev.criugpu.api.bindings.gpu_plan_path;
import dev.criugpu.api.bindings.gpu_plan_program;
import dev.criugpu.api.bindings.gpu_plan_step;
import dev.criugpu.api.bindings.gpu_plan_vma;
import dev.criugpu.api.sys.SyscallException;
import dev.criugpu.api.sys.Syscalls;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.HashMap;
import java.util.Map;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The reference semantics of a restore plan (gpu_plan.h), in Java: runs the same native plan through the
 * syscall seam as the C executor does in criu's children, so a test can compare the two. Errors come back as
 * -errno like the C entry points (the log lines are the C side's business).
 */
public final class JavaPlanExecutor {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle FCNTL = LINKER.downcallHandle(LINKER.defaultLookup().find("fcntl").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle SENDMSG = LINKER.downcallHandle(LINKER.defaultLookup().find("sendmsg").orElseThrow(),
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle SEND = LINKER.downcallHandle(LINKER.defaultLookup().find("send").orElseThrow(),
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final int F_DUPFD_CLOEXEC = 1030;
    private static final int EBADF = 9;
    private static final int ENOTSUP = 95;

    private final MemorySegment plan;
    private final Syscalls sys;
    private final MethodHandle fdstoreGet;
    private final int firstHighFd;
    private final Map<Integer, Integer> slots = new HashMap<>();
    private final boolean[] enabled;
    private int fdNext = -1;

    /** {@code firstHighFd}: what criu's find_unused_fd_pid answers for this task; {@code fdstoreGet}: criu's. */
    public JavaPlanExecutor(MemorySegment plan, Syscalls sys, int firstHighFd, MemorySegment fdstoreGet) {
        this.plan = plan.reinterpret(gpu_plan.sizeof());
        this.sys = sys;
        this.fdstoreGet = LINKER.downcallHandle(fdstoreGet, FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        this.firstHighFd = firstHighFd;
        this.enabled = new boolean[gpu_plan.num_vmas(this.plan)];
    }

    private static int dupAbove(int fd, int min) {
        try {
            return (int) FCNTL.invokeExact(fd, F_DUPFD_CLOEXEC, min);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    public int restoreExtFile(int id) {
        MemorySegment programs = gpu_plan.programs(plan).reinterpret(gpu_plan_program.sizeof() * gpu_plan.num_programs(plan));
        for (int i = 0; i < gpu_plan.num_programs(plan); i++) {
            MemorySegment p = gpu_plan_program.asSlice(programs, i);
            if (gpu_plan_program.file_id(p) != id) continue;
            Map<Integer, Integer> before = new HashMap<>(slots);
            int r = run(gpu_plan_program.steps(p).reinterpret(gpu_plan_step.sizeof() * gpu_plan_program.num_steps(p)),
                    gpu_plan_program.num_steps(p));
            if (r < 0) {
                slots.entrySet().removeIf(e -> {
                    if (before.containsKey(e.getKey())) return false;
                    sys.close(e.getValue());
                    return true;
                });
            }
            return r;
        }
        return -ENOTSUP;
    }

    private int run(MemorySegment steps, int n) {
        for (int i = 0; i < n; i++) {
            MemorySegment s = gpu_plan_step.asSlice(steps, i);
            int op = gpu_plan_step.op(s);
            int slot = gpu_plan_step.slot(s);
            try {
                if (op == gpu_plan_h.GPU_PLAN_OPEN()) {
                    if (slots.containsKey(slot)) continue;
                    int fd = sys.open(gpu_plan_step.buf(s).reinterpret(4096).getString(0), (int) gpu_plan_step.arg(s));
                    if (gpu_plan_step.arg2(s) != 0) {
                        if (fdNext < 0) fdNext = firstHighFd;
                        int high = dupAbove(fd, fdNext);
                        sys.close(fd);
                        fd = high;
                        fdNext = high + 1;
                    }
                    slots.put(slot, fd);
                } else if (op == gpu_plan_h.GPU_PLAN_IOCTL()) {
                    if (!slots.containsKey(slot)) return -EBADF;
                    sys.ioctl(slots.get(slot), (int) gpu_plan_step.arg(s), gpu_plan_step.buf(s), 200, "ioctl");
                } else if (op == gpu_plan_h.GPU_PLAN_REQUIRE()) {
                    long v = Integer.toUnsignedLong(gpu_plan_step.buf(s).reinterpret(Long.MAX_VALUE)
                            .get(JAVA_INT, gpu_plan_step.arg2(s)));
                    long arg = gpu_plan_step.arg(s);
                    if (v < (arg & 0xffffffffL) || v > (arg >>> 32)) return -ENOTSUP;
                } else if (op == gpu_plan_h.GPU_PLAN_PUT_FD()) {
                    gpu_plan_step.buf(s).reinterpret(Long.MAX_VALUE).set(JAVA_INT, gpu_plan_step.arg2(s), slots.get(slot));
                } else if (op == gpu_plan_h.GPU_PLAN_PUT_PID()) {
                    gpu_plan_step.buf(s).reinterpret(Long.MAX_VALUE).set(JAVA_INT, gpu_plan_step.arg2(s),
                            (int) ProcessHandle.current().pid());
                } else if (op == gpu_plan_h.GPU_PLAN_SEND_FDS()) {
                    sendFds(s);
                } else if (op == gpu_plan_h.GPU_PLAN_ENABLE_VMAS()) {
                    for (long k = 0; k < gpu_plan_step.arg2(s); k++) enabled[(int) (gpu_plan_step.arg(s) + k)] = true;
                } else if (op == gpu_plan_h.GPU_PLAN_RETURN()) {
                    return slots.remove(slot);
                } else if (op == gpu_plan_h.GPU_PLAN_RETURN_DUP()) {
                    return dupAbove(slots.get(slot), 0);
                } else {
                    return -22;
                }
            } catch (SyscallException e) {
                return -e.errno();
            }
        }
        return -22;
    }

    private void sendFds(MemorySegment s) {
        MemorySegment fdBuf = gpu_plan_step.fd_buf(s).reinterpret(Long.MAX_VALUE);
        MemorySegment offsets = gpu_plan_step.fd_offsets(s).reinterpret(Long.MAX_VALUE);
        int n = (int) gpu_plan_step.arg2(s);
        int[] fds = new int[n];
        for (int i = 0; i < n; i++) fds[i] = fdBuf.get(JAVA_INT, offsets.getAtIndex(JAVA_LONG, i));
        int sk;
        try {
            sk = (int) fdstoreGet.invokeExact((int) gpu_plan_step.arg(s));
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (sk < 0) throw new SyscallException(EBADF, "fdstore_get");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment message = gpu_plan_step.buf(s).reinterpret(gpu_plan_step.len(s));
            for (long done = 0; done < message.byteSize(); ) {
                long sent = (long) SEND.invokeExact(sk, message.asSlice(done), message.byteSize() - done, 0x4000);
                if (sent < 0) throw new IllegalStateException("send");
                done += sent;
            }
            for (int fd : fds) {
                MemorySegment byteBuf = a.allocate(1);
                MemorySegment iov = iovec.allocate(a);
                iovec.iov_base(iov, byteBuf);
                iovec.iov_len(iov, 1);
                MemorySegment control = a.allocate(24, 8);
                cmsghdr.cmsg_len(control, 20);
                cmsghdr.cmsg_level(control, 1);
                cmsghdr.cmsg_type(control, 1);
                control.set(JAVA_INT, 16, fd);
                MemorySegment msg = msghdr.allocate(a);
                msghdr.msg_iov(msg, iov);
                msghdr.msg_iovlen(msg, 1);
                msghdr.msg_control(msg, control);
                msghdr.msg_controllen(msg, 24);
                if ((long) SENDMSG.invokeExact(sk, msg, 0x4000) != 1) throw new IllegalStateException("sendmsg");
            }
        } catch (Throwable t) {
            throw t instanceof RuntimeException r ? r : new IllegalStateException(t);
        } finally {
            UnixSockets.close(sk);
            for (int fd : fds) sys.close(fd);
        }
    }

    /** Returns 1/0/-ENOTSUP like the C side; {@code out[0]} new offset, {@code out[1]} plugin fd. */
    public int updateVmaMap(String path, long addr, long oldOffset, long[] out) {
        String p = path.replaceAll("/+", "/");
        MemorySegment paths = gpu_plan.paths(plan).reinterpret(gpu_plan_path.sizeof() * gpu_plan.num_paths(plan));
        MemorySegment claimed = null;
        for (int i = 0; i < gpu_plan.num_paths(plan) && claimed == null; i++) {
            MemorySegment c = gpu_plan_path.asSlice(paths, i);
            String pattern = gpu_plan_path.pattern(c).reinterpret(256).getString(0);
            if (gpu_plan_path.prefix(c) != 0 ? p.startsWith(pattern) : p.equals(pattern)) claimed = c;
        }
        if (claimed == null) return -ENOTSUP;
        if (!gpu_plan_path.substitute(claimed).equals(MemorySegment.NULL)) {
            String substitute = gpu_plan_path.substitute(claimed).reinterpret(4096).getString(0);
            try {
                out[0] = 0;
                out[1] = sys.open(substitute, Syscalls.O_RDWR | Syscalls.O_CLOEXEC);
                return 1;
            } catch (SyscallException e) {
                return -e.errno();
            }
        }
        MemorySegment rows = gpu_plan.vmas(plan).reinterpret(gpu_plan_vma.sizeof() * gpu_plan.num_vmas(plan));
        for (int i = 0; i < enabled.length; i++) {
            MemorySegment r = gpu_plan_vma.asSlice(rows, i);
            if (!enabled[i] || gpu_plan_vma.addr(r) != addr || gpu_plan_vma.old_offset(r) != oldOffset) continue;
            out[0] = gpu_plan_vma.new_offset(r).reinterpret(8).get(JAVA_LONG, 0);
            out[1] = gpu_plan_path.reopen(claimed) != 0 ? -1 : dupAbove(slots.get(gpu_plan_vma.slot(r)), 0);
            return 1;
        }
        return 0;
    }
}

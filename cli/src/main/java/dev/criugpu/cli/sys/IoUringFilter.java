package dev.criugpu.cli.sys;

import dev.criugpu.api.Errno;
import dev.criugpu.api.bindings.libc_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * A seccomp filter under which io_uring_setup, io_uring_enter and io_uring_register fail with ENOSYS, as on a kernel
 * built without io_uring, and every other call runs as before. It is inherited across fork and exec, so a whole job
 * started under it has no io_uring: libuv (PyTorch's TCPStore, torchrun's elastic agent) then falls back to plain
 * epoll, and criu 4.2.1, which cannot dump an io_uring, can dump the job. The filter is a classic BPF program over
 * {@code struct seccomp_data} (nr at offset 0, arch at 4); the three calls are 425-427 on x86_64 and aarch64 alike;
 * other architectures are let through untouched.
 */
public final class IoUringFilter {
    private static final int AUDIT_ARCH_X86_64 = 0xC000003E;
    private static final int AUDIT_ARCH_AARCH64 = 0xC00000B7;
    private static final int IO_URING_SETUP = 425;
    private static final int IO_URING_REGISTER = 427;
    private static final int ENOSYS = 38;
    private static final int RET_ERRNO = 0x00050000;
    private static final int RET_ALLOW = 0x7FFF0000;
    private static final short LD_W_ABS = 0x20, JEQ_K = 0x15, JGE_K = 0x35, JGT_K = 0x25, RET_K = 0x06;

    /** {code, jt, jf, k} per instruction; jumps are relative to the next one. */
    private static final int[][] PROGRAM = {
            {LD_W_ABS, 0, 0, 4},                         // arch
            {JEQ_K, 1, 0, AUDIT_ARCH_X86_64},
            {JEQ_K, 0, 4, AUDIT_ARCH_AARCH64},
            {LD_W_ABS, 0, 0, 0},                         // nr
            {JGE_K, 0, 2, IO_URING_SETUP},
            {JGT_K, 1, 0, IO_URING_REGISTER},
            {RET_K, 0, 0, RET_ERRNO | ENOSYS},
            {RET_K, 0, 0, RET_ALLOW},
    };

    private IoUringFilter() {
    }

    /**
     * Installs the filter on this process. Without CAP_SYS_ADMIN the kernel takes a filter only after no_new_privs
     * (set-user-ID programs then no longer gain privileges), so that is set only where the plain attempt is refused.
     *
     * @throws IllegalStateException naming the reason when the kernel refuses the filter
     */
    public static void install() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment filter = arena.allocate(8L * PROGRAM.length, 8);
            for (int i = 0; i < PROGRAM.length; i++) {
                long at = 8L * i;
                filter.set(JAVA_SHORT, at, (short) PROGRAM[i][0]);
                filter.set(JAVA_BYTE, at + 2, (byte) PROGRAM[i][1]);
                filter.set(JAVA_BYTE, at + 3, (byte) PROGRAM[i][2]);
                filter.set(JAVA_INT, at + 4, PROGRAM[i][3]);
            }
            MemorySegment fprog = arena.allocate(16, 8);   // struct sock_fprog { unsigned short len; filter * }
            fprog.set(JAVA_SHORT, 0, (short) PROGRAM.length);
            fprog.set(ADDRESS, 8, filter);
            libc_h.Result r = libc_h.prctl(libc_h.PR_SET_SECCOMP, libc_h.SECCOMP_MODE_FILTER, fprog.address(), 0, 0);
            if (r.failed() && r.errno() == Errno.EACCES) {
                libc_h.Result nnp = libc_h.prctl(libc_h.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if (nnp.failed()) throw new IllegalStateException("prctl(PR_SET_NO_NEW_PRIVS) failed: " + Errno.name(nnp.errno()));
                r = libc_h.prctl(libc_h.PR_SET_SECCOMP, libc_h.SECCOMP_MODE_FILTER, fprog.address(), 0, 0);
            }
            if (r.failed()) throw new IllegalStateException("the kernel refused the seccomp filter: " + Errno.name(r.errno()));
        }
    }
}

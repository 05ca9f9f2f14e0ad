package dev.criugpu.api.sys;

import dev.criugpu.api.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Another task's memory, copied straight between it and ours (process_vm_writev / process_vm_readv): the caller needs
 * ptrace access to the task (root does). The task's pages are faulted in as its own: a range the task has not mapped
 * writable fails with EFAULT, never maps anything.
 */
public final class TaskMemory {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MemoryLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final FunctionDescriptor SIGNATURE =
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG);

    private TaskMemory() {
    }

    private static final class Handles {
        static final MethodHandle WRITEV = bind("process_vm_writev");
        static final MethodHandle READV = bind("process_vm_readv");

        private static MethodHandle bind(String name) {
            return LINKER.downcallHandle(LINKER.defaultLookup().find(name)
                    .orElseThrow(() -> new IllegalStateException("no symbol " + name)), SIGNATURE,
                    Linker.Option.captureCallState("errno"));
        }
    }

    /** Writes all of {@code from} into task {@code pid} at {@code address}. */
    public static void write(int pid, MemorySegment from, long address) {
        copy(Handles.WRITEV, "writing", pid, from, address);
    }

    /** Reads {@code into.byteSize()} bytes of task {@code pid} from {@code address}. */
    public static void read(int pid, long address, MemorySegment into) {
        copy(Handles.READV, "reading", pid, into, address);
    }

    private static void copy(MethodHandle call, String what, int pid, MemorySegment local, long address) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            MemorySegment localIov = arena.allocate(16, 8);
            MemorySegment remoteIov = arena.allocate(16, 8);
            for (long done = 0, size = local.byteSize(); done < size; ) {
                localIov.set(JAVA_LONG, 0, local.address() + done);
                localIov.set(JAVA_LONG, 8, size - done);
                remoteIov.set(JAVA_LONG, 0, address + done);
                remoteIov.set(JAVA_LONG, 8, size - done);
                long n = (long) call.invokeExact(state, pid, localIov, 1L, remoteIov, 1L, 0L);
                if (n <= 0) {
                    int errno = n < 0 ? (int) ERRNO.get(state, 0L) : Errno.EIO;
                    throw new SyscallException(errno, "pid " + pid + ": " + what + " " + (size - done) + " bytes at 0x"
                            + Long.toHexString(address + done) + " failed: " + Errno.name(errno));
                }
                done += n;
            }
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("process_vm " + what + " of pid " + pid, t);
        }
    }
}

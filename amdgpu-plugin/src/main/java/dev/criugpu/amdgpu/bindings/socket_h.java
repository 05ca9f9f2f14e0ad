package dev.criugpu.amdgpu.bindings;

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
 * Constants and libc functions of {@code <sys/socket.h>}, {@code <poll.h>}, {@code <sys/eventfd.h>} and
 * {@code <signal.h>} the refill sockets use, in the shape jextract generates. Every function takes a leading
 * call-state segment ({@link #CALL_STATE}) that receives errno. Constants are checked against the headers by
 * {@code LayoutConformanceTest}.
 */
public final class socket_h {
    private socket_h() {
    }

    private static final Linker LINKER = Linker.nativeLinker();
    public static final MemoryLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    public static int errno(MemorySegment callState) { return (int) ERRNO.get(callState, 0L); }

    public static int AF_UNIX() { return 1; }
    public static int SOCK_STREAM() { return 1; }
    public static int SOCK_NONBLOCK() { return 0x800; }
    public static int SOCK_CLOEXEC() { return 0x80000; }
    public static int SOL_SOCKET() { return 1; }
    public static int SCM_RIGHTS() { return 1; }
    public static int MSG_CTRUNC() { return 0x8; }
    public static int MSG_NOSIGNAL() { return 0x4000; }
    public static int MSG_DONTWAIT() { return 0x40; }
    public static int MSG_CMSG_CLOEXEC() { return 0x40000000; }
    public static int POLLIN() { return 1; }
    public static int EFD_CLOEXEC() { return 0x80000; }

    private static MethodHandle fn(String name, FunctionDescriptor d) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), d,
                Linker.Option.captureCallState("errno"));
    }

    private static final MethodHandle SOCKET = fn("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle SOCKETPAIR = fn("socketpair",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle RECV = fn("recv", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle SEND = fn("send", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle RECVMSG = fn("recvmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final MethodHandle POLL = fn("poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle EVENTFD = fn("eventfd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    private static final MethodHandle WRITE = fn("write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle CLOSE = fn("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    public static int socket(MemorySegment state, int domain, int type, int protocol) {
        try { return (int) SOCKET.invokeExact(state, domain, type, protocol); } catch (Throwable t) { throw rethrow(t); }
    }

    public static int socketpair(MemorySegment state, int domain, int type, int protocol, MemorySegment fds) {
        try { return (int) SOCKETPAIR.invokeExact(state, domain, type, protocol, fds); } catch (Throwable t) { throw rethrow(t); }
    }

    public static long recv(MemorySegment state, int fd, MemorySegment buf, long len, int flags) {
        try { return (long) RECV.invokeExact(state, fd, buf, len, flags); } catch (Throwable t) { throw rethrow(t); }
    }

    public static long send(MemorySegment state, int fd, MemorySegment buf, long len, int flags) {
        try { return (long) SEND.invokeExact(state, fd, buf, len, flags); } catch (Throwable t) { throw rethrow(t); }
    }

    public static long recvmsg(MemorySegment state, int fd, MemorySegment msg, int flags) {
        try { return (long) RECVMSG.invokeExact(state, fd, msg, flags); } catch (Throwable t) { throw rethrow(t); }
    }

    public static int poll(MemorySegment state, MemorySegment fds, long nfds, int timeout) {
        try { return (int) POLL.invokeExact(state, fds, nfds, timeout); } catch (Throwable t) { throw rethrow(t); }
    }

    public static int eventfd(MemorySegment state, int initval, int flags) {
        try { return (int) EVENTFD.invokeExact(state, initval, flags); } catch (Throwable t) { throw rethrow(t); }
    }

    public static long write(MemorySegment state, int fd, MemorySegment buf, long len) {
        try { return (long) WRITE.invokeExact(state, fd, buf, len); } catch (Throwable t) { throw rethrow(t); }
    }

    public static int close(MemorySegment state, int fd) {
        try { return (int) CLOSE.invokeExact(state, fd); } catch (Throwable t) { throw rethrow(t); }
    }

}

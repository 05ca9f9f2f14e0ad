package dev.criugpu.amdgpu.sys;

import dev.criugpu.amdgpu.bindings.cmsghdr;
import dev.criugpu.amdgpu.bindings.iovec;
import dev.criugpu.amdgpu.bindings.msghdr;
import dev.criugpu.amdgpu.bindings.pollfd;
import dev.criugpu.amdgpu.bindings.socket_h;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.SyscallException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The unix-socket calls of the refill path (libc through {@code socket_h}): socket pairs, reads that wait for
 * data only until a stop eventfd fires (so a peer that never finishes cannot hang criu), SCM_RIGHTS reception,
 * an eventfd to wake a poller. Every failure is a {@link SyscallException} naming the call.
 */
public final class UnixSockets {
    private static final int CMSG_HEADER = 16; // CMSG_LEN(0) on LP64

    private UnixSockets() {
    }

    private static SyscallException failure(String what, MemorySegment state) {
        int e = socket_h.errno(state);
        return new SyscallException(e, what + " failed: " + Errno.name(e));
    }

    /** A connected close-on-exec stream pair: {@code [0]} for this process, {@code [1]} for the peer. */
    public static int[] pair() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            MemorySegment fds = a.allocate(JAVA_INT, 2);
            if (socket_h.socketpair(st, socket_h.AF_UNIX(), socket_h.SOCK_STREAM() | socket_h.SOCK_CLOEXEC(), 0, fds) < 0) {
                throw failure("socketpair", st);
            }
            return fds.toArray(JAVA_INT);
        }
    }

    /** Waits until {@code fd} is readable; false when {@code stopFd} fired and {@code fd} has nothing to read. */
    private static boolean awaitReadable(int fd, int stopFd) {
        return pollReadable(fd, stopFd)[0];
    }

    /**
     * Fills {@code into} from {@code fd}; returns the bytes read, less than asked when the peer closed the
     * connection or {@code stopFd} fired while no more data was there.
     */
    public static int readFully(int fd, byte[] into, int stopFd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            MemorySegment buf = a.allocate(Math.max(1, into.length)).asSlice(0, into.length);
            long done = 0;
            while (done < buf.byteSize()) {
                long n = socket_h.recv(st, fd, buf.asSlice(done), buf.byteSize() - done, socket_h.MSG_DONTWAIT());
                if (n == 0) break;
                if (n > 0) {
                    done += n;
                    continue;
                }
                int e = socket_h.errno(st);
                if (e == Errno.EINTR) continue;
                if (e != Errno.EAGAIN) throw failure("recv", st);
                if (!awaitReadable(fd, stopFd)) break;
            }
            MemorySegment.copy(buf, JAVA_BYTE, 0, into, 0, (int) done);
            return (int) done;
        }
    }

    /**
     * Receives one message of one byte and the fds that came with it (SCM_RIGHTS, close-on-exec), at most
     * {@code max}. Returns null when the peer closed the connection or {@code stopFd} fired first. A truncated
     * fd list fails after closing the fds that did arrive.
     */
    public static int[] receiveFds(int fd, int max, int stopFd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            MemorySegment data = a.allocate(1);
            MemorySegment iov = iovec.allocate(a);
            iovec.iov_base(iov, data);
            iovec.iov_len(iov, 1);
            long controlBytes = CMSG_HEADER + 4L * max;
            MemorySegment control = a.allocate(controlBytes, 8);
            MemorySegment msg = msghdr.allocate(a);
            msghdr.msg_iov(msg, iov);
            msghdr.msg_iovlen(msg, 1);
            msghdr.msg_control(msg, control);
            long n;
            while (true) {
                msghdr.msg_controllen(msg, controlBytes);
                n = socket_h.recvmsg(st, fd, msg, socket_h.MSG_CMSG_CLOEXEC() | socket_h.MSG_DONTWAIT());
                if (n >= 0) break;
                int e = socket_h.errno(st);
                if (e == Errno.EINTR) continue;
                if (e != Errno.EAGAIN) throw failure("recvmsg", st);
                if (!awaitReadable(fd, stopFd)) return null;
            }
            int[] fds = fdsIn(control, msghdr.msg_controllen(msg));
            if (n == 0 && fds.length == 0) return null;
            if ((msghdr.msg_flags(msg) & socket_h.MSG_CTRUNC()) != 0) {
                closeAll(fds);
                throw new SyscallException(Errno.EMSGSIZE, "recvmsg: more than " + max + " fds in one message");
            }
            return fds;
        }
    }

    private static int[] fdsIn(MemorySegment control, long length) {
        if (length < CMSG_HEADER) return new int[0];
        MemorySegment c = control.asSlice(0, length);
        long len = cmsghdr.cmsg_len(c);
        if (cmsghdr.cmsg_level(c) != socket_h.SOL_SOCKET() || cmsghdr.cmsg_type(c) != socket_h.SCM_RIGHTS()
                || len < CMSG_HEADER || len > length) {
            return new int[0];
        }
        int[] fds = new int[(int) ((len - CMSG_HEADER) / 4)];
        for (int i = 0; i < fds.length; i++) fds[i] = c.get(JAVA_INT, CMSG_HEADER + 4L * i);
        return fds;
    }

    /** Blocks until one of {@code fds} is readable (or hung up); returns a mask with bit i set for each ready fds[i]. */
    public static boolean[] pollReadable(int... fds) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            MemorySegment p = a.allocate(pollfd.layout(), fds.length);
            for (int i = 0; i < fds.length; i++) {
                MemorySegment e = p.asSlice(i * pollfd.sizeof(), pollfd.sizeof());
                pollfd.fd(e, fds[i]);
                pollfd.events(e, (short) socket_h.POLLIN());
            }
            while (socket_h.poll(st, p, fds.length, -1) < 0) {
                if (socket_h.errno(st) != Errno.EINTR) throw failure("poll", st);
            }
            boolean[] ready = new boolean[fds.length];
            for (int i = 0; i < fds.length; i++) {
                ready[i] = pollfd.revents(p.asSlice(i * pollfd.sizeof(), pollfd.sizeof())) != 0;
            }
            return ready;
        }
    }

    public static int eventFd() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            int fd = socket_h.eventfd(st, 0, socket_h.EFD_CLOEXEC());
            if (fd < 0) throw failure("eventfd", st);
            return fd;
        }
    }

    /** Makes an eventfd readable (for good: nobody reads it). */
    public static void signal(int eventFd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            if (socket_h.write(st, eventFd, a.allocateFrom(JAVA_LONG, 1L), 8) != 8) throw failure("eventfd write", st);
        }
    }

    public static void close(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            if (socket_h.close(st, fd) < 0) throw failure("close fd " + fd, st);
        }
    }

    /** Closes every fd, ignoring errors (clean-up on a path that already fails). */
    public static void closeAll(int[] fds) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            for (int fd : fds) socket_h.close(st, fd);
        }
    }
}

package dev.criugpu.amdgpu.sys;

import dev.criugpu.amdgpu.bindings.cmsghdr;
import dev.criugpu.amdgpu.bindings.iovec;
import dev.criugpu.amdgpu.bindings.msghdr;
import dev.criugpu.amdgpu.bindings.pollfd;
import dev.criugpu.amdgpu.bindings.sockaddr_un;
import dev.criugpu.amdgpu.bindings.socket_h;
import dev.criugpu.amdgpu.bindings.ucred;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.OptionalInt;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The unix-socket calls of the refill path (libc through {@code socket_h}): an abstract-name listening socket,
 * accept, exact reads, SCM_RIGHTS fd reception, the peer's pid, and an eventfd to wake a poller. Every failure
 * is a {@link SyscallException} naming the call.
 */
public final class UnixSockets {
    private static final int CMSG_HEADER = 16; // CMSG_LEN(0) on LP64

    private UnixSockets() {
    }

    /** {@code struct sockaddr_un} bytes and length for the abstract name {@code name} (no leading NUL given). */
    public record Address(byte[] bytes, int length) {
        public static Address abstractName(String name) {
            byte[] path = name.getBytes(StandardCharsets.US_ASCII);
            if (path.length + 1 > 108) throw new IllegalArgumentException("socket name too long: " + name);
            byte[] b = new byte[(int) sockaddr_un.sizeof()];
            b[0] = (byte) socket_h.AF_UNIX(); // sun_family, little-endian u16
            System.arraycopy(path, 0, b, 3, path.length); // sun_path[0] = 0: abstract
            return new Address(b, 2 + 1 + path.length);
        }
    }

    private static SyscallException failure(String what, MemorySegment state) {
        int e = socket_h.errno(state);
        return new SyscallException(e, what + " failed: " + Errnos.name(e));
    }

    /** A non-blocking, close-on-exec stream socket listening on {@code address}. */
    public static int listen(Address address) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            int fd = socket_h.socket(st, socket_h.AF_UNIX(),
                    socket_h.SOCK_STREAM() | socket_h.SOCK_CLOEXEC() | socket_h.SOCK_NONBLOCK(), 0);
            if (fd < 0) throw failure("socket", st);
            MemorySegment addr = a.allocateFrom(JAVA_BYTE, address.bytes());
            if (socket_h.bind(st, fd, addr, address.length()) < 0 || socket_h.listen(st, fd, 128) < 0) {
                SyscallException e = failure("bind/listen on the refill socket", st);
                socket_h.close(st, fd);
                throw e;
            }
            return fd;
        }
    }

    /** A blocking, close-on-exec connection to {@code address}. */
    public static int connect(Address address) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            int fd = socket_h.socket(st, socket_h.AF_UNIX(), socket_h.SOCK_STREAM() | socket_h.SOCK_CLOEXEC(), 0);
            if (fd < 0) throw failure("socket", st);
            if (socket_h.connect(st, fd, a.allocateFrom(JAVA_BYTE, address.bytes()), address.length()) < 0) {
                SyscallException e = failure("connect", st);
                socket_h.close(st, fd);
                throw e;
            }
            return fd;
        }
    }

    /** The next pending connection as a blocking socket, or empty when none is pending. */
    public static OptionalInt accept(int listenFd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            while (true) {
                int fd = socket_h.accept4(st, listenFd, MemorySegment.NULL, MemorySegment.NULL, socket_h.SOCK_CLOEXEC());
                if (fd >= 0) return OptionalInt.of(fd);
                int e = socket_h.errno(st);
                if (e == Syscalls.EINTR || e == Errnos.ECONNABORTED) continue;
                if (e == Syscalls.EAGAIN) return OptionalInt.empty();
                throw failure("accept", st);
            }
        }
    }

    /**
     * Fills {@code buf} from {@code fd}; returns the bytes read, which is less than asked only when the peer closed
     * the connection first.
     */
    public static long readFully(int fd, MemorySegment buf) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            long done = 0;
            while (done < buf.byteSize()) {
                long n = socket_h.recv(st, fd, buf.asSlice(done), buf.byteSize() - done, 0);
                if (n == 0) break;
                if (n < 0) {
                    if (socket_h.errno(st) == Syscalls.EINTR) continue;
                    throw failure("recv", st);
                }
                done += n;
            }
            return done;
        }
    }

    /** Writes all of {@code buf} (test peers and tools). */
    public static void sendAll(int fd, MemorySegment buf) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            for (long done = 0; done < buf.byteSize(); ) {
                long n = socket_h.send(st, fd, buf.asSlice(done), buf.byteSize() - done, socket_h.MSG_NOSIGNAL());
                if (n < 0) {
                    if (socket_h.errno(st) == Syscalls.EINTR) continue;
                    throw failure("send", st);
                }
                done += n;
            }
        }
    }

    /**
     * Receives one message of one byte and the fds that came with it (SCM_RIGHTS, close-on-exec), at most
     * {@code max}. Returns null when the peer closed the connection first. A truncated fd list fails after
     * closing the fds that did arrive.
     */
    public static int[] receiveFds(int fd, int max) {
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
            msghdr.msg_controllen(msg, controlBytes);
            long n;
            do {
                n = socket_h.recvmsg(st, fd, msg, socket_h.MSG_CMSG_CLOEXEC());
            } while (n < 0 && socket_h.errno(st) == Syscalls.EINTR);
            if (n < 0) throw failure("recvmsg", st);
            int[] fds = fdsIn(control, msghdr.msg_controllen(msg));
            if (n == 0 && fds.length == 0) return null;
            if ((msghdr.msg_flags(msg) & socket_h.MSG_CTRUNC()) != 0) {
                closeAll(fds);
                throw new SyscallException(Errnos.EMSGSIZE, "recvmsg: more than " + max + " fds in one message");
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

    /** The pid of the process at the other end of a connected socket, in this process's pid namespace. */
    public static int peerPid(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            MemorySegment cred = ucred.allocate(a);
            MemorySegment len = a.allocateFrom(JAVA_INT, (int) ucred.sizeof());
            if (socket_h.getsockopt(st, fd, socket_h.SOL_SOCKET(), socket_h.SO_PEERCRED(), cred, len) < 0) {
                throw failure("getsockopt SO_PEERCRED", st);
            }
            return ucred.pid(cred);
        }
    }

    /** Blocks until one of {@code fds} is readable; returns a mask with bit i set for each readable fds[i]. */
    public static int pollReadable(int... fds) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            MemorySegment p = a.allocate(pollfd.layout(), fds.length);
            for (int i = 0; i < fds.length; i++) {
                MemorySegment e = p.asSlice(i * pollfd.sizeof(), pollfd.sizeof());
                pollfd.fd(e, fds[i]);
                pollfd.events(e, (short) socket_h.POLLIN());
            }
            while (socket_h.poll(st, p, fds.length, -1) < 0) {
                if (socket_h.errno(st) != Syscalls.EINTR) throw failure("poll", st);
            }
            int mask = 0;
            for (int i = 0; i < fds.length; i++) {
                if (pollfd.revents(p.asSlice(i * pollfd.sizeof(), pollfd.sizeof())) != 0) mask |= 1 << i;
            }
            return mask;
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

    /** Makes an eventfd readable. */
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

    /** SIGKILL to {@code pid}; false if it is gone already. */
    public static boolean kill(int pid) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = a.allocate(socket_h.CALL_STATE);
            return socket_h.kill(st, pid, socket_h.SIGKILL()) == 0;
        }
    }
}

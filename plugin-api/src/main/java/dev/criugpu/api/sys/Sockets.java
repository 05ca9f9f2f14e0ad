package dev.criugpu.api.sys;

import dev.criugpu.api.Errno;
import dev.criugpu.api.bindings.Downcall;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.VarHandle;
import java.util.function.IntConsumer;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The calls behind a helper's connection (DESIGN rule 11: a root process of ours is handed fds, it never looks up a
 * name another user can create): a socketpair whose one end the helper inherits, fds passed along it (SCM_RIGHTS),
 * and the peer's credentials (SO_PEERCRED); the helper itself is started by the shim's launcher (HelperLauncher).
 * Linux, LP64 (x86_64, aarch64). Each call is linked on first use; errno is captured right after it.
 */
public final class Sockets {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final MemoryLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE = Linker.Option.captureCallState("errno");

    private static final int AF_UNIX = 1;
    private static final int SOCK_STREAM = 1;
    private static final int AF_NETLINK = 16;
    private static final int SOCK_RAW = 3;
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final int SOL_SOCKET = 1;
    private static final int SCM_RIGHTS = 1;
    private static final int SO_PEERCRED = 17;
    private static final int SHUT_RDWR = 2;
    private static final int MSG_NOSIGNAL = 0x4000;
    private static final int MSG_DONTWAIT = 0x40;
    private static final int MSG_CMSG_CLOEXEC = 0x40000000;
    /** struct msghdr (LP64): name, namelen, iov, iovlen, control, controllen, flags. */
    private static final long MSGHDR_SIZE = 56;
    /** struct cmsghdr: len (size_t), level, type, then the data; CMSG_SPACE of up to 8 fds. */
    private static final long CMSG_HEADER = 16;
    private static final int MAX_FDS = 8;
    private static final long CMSG_SPACE = CMSG_HEADER + MAX_FDS * 4L;

    private static final Downcall SOCKET = bind("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
    private static final Downcall SOCKETPAIR = bind("socketpair", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final Downcall SENDMSG = bind("sendmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final Downcall RECVMSG = bind("recvmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT));
    private static final Downcall READ = bind("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final Downcall WRITE = bind("write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final Downcall GETSOCKOPT = bind("getsockopt",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
    private static final Downcall SHUTDOWN = bind("shutdown", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));

    private Sockets() {
    }

    private static Downcall bind(String name, FunctionDescriptor d, Linker.Option... extra) {
        Linker.Option[] opts = new Linker.Option[extra.length + 1];
        System.arraycopy(extra, 0, opts, 0, extra.length);
        opts[extra.length] = CAPTURE;
        return Downcall.find(LIBC, name, d, opts);
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    private static SyscallException failure(String what, int errno) {
        return new SyscallException(errno, what + " failed: " + Errno.name(errno));
    }

    private static IllegalStateException broken(String what, Throwable t) {
        return new IllegalStateException(what, t);
    }

    /** A connected pair of UNIX stream sockets, both close-on-exec: {@code [0]} stays here, {@code [1]} is handed on. */
    public static int[] socketPair() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment sv = a.allocate(JAVA_INT, 2);
            if ((int) SOCKETPAIR.handle().invokeExact(state, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
                throw failure("socketpair", errno(state));
            }
            return new int[] {sv.getAtIndex(JAVA_INT, 0), sv.getAtIndex(JAVA_INT, 1)};
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw broken("socketpair", t);
        }
    }

    /** A close-on-exec netlink socket of {@code protocol} (NETLINK_SOCK_DIAG, ...): write(2) sends to the kernel. */
    public static int netlink(int protocol) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            int fd = (int) SOCKET.handle().invokeExact(state, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
            if (fd < 0) throw failure("socket(AF_NETLINK, " + protocol + ")", errno(state));
            return fd;
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw broken("socket", t);
        }
    }

    /** Whether {@code fd} is open and a socket (by /proc: no call to link on the helper's way to its first line). */
    public static boolean isSocket(int fd) {
        try {
            return java.nio.file.Files.readSymbolicLink(java.nio.file.Path.of("/proc/self/fd/" + fd)).toString().startsWith("socket:");
        } catch (java.io.IOException | RuntimeException e) {
            return false;
        }
    }

    /** The process at the other end of a UNIX socket, as the kernel recorded it when the pair was made. */
    public record Peer(int pid, int uid, int gid) {
    }

    /** SO_PEERCRED of {@code fd}. */
    public static Peer peer(int fd) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment cred = a.allocate(JAVA_INT, 3);
            MemorySegment len = a.allocateFrom(JAVA_INT, 12);
            if ((int) GETSOCKOPT.handle().invokeExact(state, fd, SOL_SOCKET, SO_PEERCRED, cred, len) < 0) {
                throw failure("getsockopt SO_PEERCRED of fd " + fd, errno(state));
            }
            return new Peer(cred.getAtIndex(JAVA_INT, 0), cred.getAtIndex(JAVA_INT, 1), cred.getAtIndex(JAVA_INT, 2));
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw broken("getsockopt", t);
        }
    }

    /** This process's effective uid, read from /proc (no call to link on the helper's way to its first line). */
    public static int effectiveUid() {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) return Integer.parseInt(line.substring(4).trim().split("\\s+")[1]);
            }
        } catch (java.io.IOException | RuntimeException e) {
            // below
        }
        throw new IllegalStateException("cannot read this process's uid from /proc/self/status");
    }

    /**
     * sendmsg of {@code len} bytes of {@code buf} (all of them, in as many calls as it takes), never raising SIGPIPE;
     * {@code passFd} (or -1) goes along with the first byte as SCM_RIGHTS.
     */
    public static void send(int fd, MemorySegment buf, long len, int passFd) {
        long off = 0;
        while (off < len) off += sendOnce(fd, buf.asSlice(off), len - off, off == 0 ? passFd : -1, MSG_NOSIGNAL);
    }

    /**
     * One sendmsg of {@code bytes} that neither waits for room nor raises SIGPIPE: how many were taken (EAGAIN, a
     * full socket, is a SyscallException).
     */
    public static long sendNow(int fd, byte[] bytes) {
        try (Arena a = Arena.ofConfined()) {
            return sendOnce(fd, a.allocateFrom(JAVA_BYTE, bytes), bytes.length, -1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
    }

    /** One sendmsg (retried on EINTR) of up to {@code len} bytes of {@code buf}, {@code passFd} (or -1) along. */
    private static long sendOnce(int fd, MemorySegment buf, long len, int passFd, int flags) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment msg = a.allocate(MSGHDR_SIZE, 8);
            MemorySegment iov = a.allocate(16, 8);
            iov.set(ADDRESS, 0, buf);
            iov.set(JAVA_LONG, 8, len);
            msg.set(ADDRESS, 16, iov);
            msg.set(JAVA_LONG, 24, 1);
            if (passFd >= 0) {
                MemorySegment control = a.allocate(CMSG_HEADER + 8, 8);
                control.set(JAVA_LONG, 0, CMSG_HEADER + 4);
                control.set(JAVA_INT, 8, SOL_SOCKET);
                control.set(JAVA_INT, 12, SCM_RIGHTS);
                control.set(JAVA_INT, 16, passFd);
                msg.set(ADDRESS, 32, control);
                msg.set(JAVA_LONG, 40, CMSG_HEADER + 8);
            }
            while (true) {
                long n = (long) SENDMSG.handle().invokeExact(state, fd, msg, flags);
                if (n >= 0) return n;
                if (errno(state) != Errno.EINTR) throw failure("sendmsg on fd " + fd, errno(state));
            }
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw broken("sendmsg", t);
        }
    }

    /** {@link #send(int, MemorySegment, long, int)} of {@code bytes}. */
    public static void send(int fd, byte[] bytes, int passFd) {
        try (Arena a = Arena.ofConfined()) {
            send(fd, a.allocateFrom(JAVA_BYTE, bytes), bytes.length, passFd);
        }
    }

    /** {@link #receive(int, MemorySegment, long, IntConsumer)} into {@code into} from its start. */
    public static int receive(int fd, byte[] into, IntConsumer fds) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(Math.max(into.length, 1));
            int n = (int) receive(fd, buf, into.length, fds);
            MemorySegment.copy(buf, JAVA_BYTE, 0, into, 0, n);
            return n;
        }
    }

    /** {@link #write(int, MemorySegment, long)} of {@code len} bytes of {@code bytes} from {@code off}. */
    public static void write(int fd, byte[] bytes, int off, int len) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(Math.max(len, 1));
            MemorySegment.copy(bytes, off, buf, JAVA_BYTE, 0, len);
            write(fd, buf, len);
        }
    }

    /**
     * recvmsg of up to {@code len} bytes into {@code buf}: how many (0 at the other end's end); each fd that came
     * along (close-on-exec here) goes to {@code fds}.
     */
    public static long receive(int fd, MemorySegment buf, long len, IntConsumer fds) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment msg = a.allocate(MSGHDR_SIZE, 8);
            MemorySegment iov = a.allocate(16, 8);
            MemorySegment control = a.allocate(CMSG_SPACE, 8);
            while (true) {
                msg.fill((byte) 0);
                control.fill((byte) 0);
                iov.set(ADDRESS, 0, buf);
                iov.set(JAVA_LONG, 8, len);
                msg.set(ADDRESS, 16, iov);
                msg.set(JAVA_LONG, 24, 1);
                msg.set(ADDRESS, 32, control);
                msg.set(JAVA_LONG, 40, CMSG_SPACE);
                long n = (long) RECVMSG.handle().invokeExact(state, fd, msg, MSG_CMSG_CLOEXEC);
                if (n < 0) {
                    if (errno(state) == Errno.EINTR) continue;
                    throw failure("recvmsg on fd " + fd, errno(state));
                }
                long controlLen = msg.get(JAVA_LONG, 40);
                // one SCM_RIGHTS message at most: the sender passes one fd per sendmsg
                if (controlLen >= CMSG_HEADER && control.get(JAVA_INT, 8) == SOL_SOCKET && control.get(JAVA_INT, 12) == SCM_RIGHTS) {
                    long count = (Math.min(control.get(JAVA_LONG, 0), CMSG_SPACE) - CMSG_HEADER) / 4;
                    for (int i = 0; i < count; i++) fds.accept(control.get(JAVA_INT, CMSG_HEADER + 4L * i));
                }
                return n;
            }
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw broken("recvmsg", t);
        }
    }

    /** read(2) of up to {@code len} bytes (retried on EINTR): how many, 0 at the end. */
    public static long read(int fd, MemorySegment buf, long len) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            while (true) {
                long n = (long) READ.handle().invokeExact(state, fd, buf, len);
                if (n >= 0) return n;
                if (errno(state) != Errno.EINTR) throw failure("read of fd " + fd, errno(state));
            }
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw broken("read", t);
        }
    }

    /** write(2) of all {@code len} bytes of {@code buf}. */
    public static void write(int fd, MemorySegment buf, long len) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            long off = 0;
            while (off < len) {
                long n = (long) WRITE.handle().invokeExact(state, fd, buf.asSlice(off), len - off);
                if (n < 0) {
                    if (errno(state) == Errno.EINTR) continue;
                    throw failure("write of fd " + fd, errno(state));
                }
                off += n;
            }
        } catch (SyscallException e) {
            throw e;
        } catch (Throwable t) {
            throw broken("write", t);
        }
    }

    /** shutdown(fd, SHUT_RDWR): a thread blocked reading it sees the end; quietly nothing if it is not connected. */
    public static void shutdown(int fd) {
        try (Arena a = Arena.ofConfined()) {
            int ignored = (int) SHUTDOWN.handle().invokeExact(a.allocate(CALL_STATE), fd, SHUT_RDWR);
        } catch (Throwable t) {
            throw broken("shutdown", t);
        }
    }
}

package dev.criugpu.api.sys;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * TCP connections in TIME_WAIT (and listeners) on a local port, asked of the kernel through sock_diag, and their removal
 * (SOCK_DESTROY, CONFIG_INET_DIAG_DESTROY). A TIME_WAIT entry left by a connection that a listener's own side closed
 * holds the listener's port with that listener's reuse setting: criu's bind of the restored listener then fails with
 * "Address already in use" for up to 60 s, although it sets SO_REUSEADDR and SO_REUSEPORT (measured, issue 32).
 * Layouts: linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h.
 */
public final class TcpTimeWait {
    private static final int NETLINK_SOCK_DIAG = 4;
    private static final short SOCK_DIAG_BY_FAMILY = 20;
    private static final short SOCK_DESTROY = 21;
    private static final short NLMSG_ERROR = 2;
    private static final short NLMSG_DONE = 3;
    private static final short NLM_F_REQUEST = 1;
    private static final short NLM_F_ACK = 4;
    private static final short NLM_F_DUMP = 0x300;
    private static final int IPPROTO_TCP = 6;
    private static final int TCP_TIME_WAIT = 6;
    private static final int TCP_LISTEN = 10;
    public static final int AF_INET = 2;
    public static final int AF_INET6 = 10;
    private static final int HEADER = 16;
    private static final int REQUEST = HEADER + 8 + 48;

    private TcpTimeWait() {
    }

    /** How long a connection stays in TIME_WAIT: the kernel's TCP_TIMEWAIT_LEN. */
    public static final long LENGTH_MS = 60_000;

    /**
     * One TIME_WAIT entry: family, local and remote address (4 or 16 bytes) and port, the kernel's cookie, and the ms
     * until it expires. The kernel tells no owner of a TIME_WAIT entry (its uid is always 0): when it began is what
     * tells whose it can be.
     */
    public record Entry(int family, byte[] local, int localPort, byte[] remote, int remotePort, long cookie, long expiresMs) {
        /** When (ms since the epoch, {@code nowMs} being now) the connection entered TIME_WAIT. */
        public long beganMs(long nowMs) {
            return nowMs - (LENGTH_MS - expiresMs);
        }

        @Override
        public String toString() {
            return address(local) + ":" + localPort + " -> " + address(remote) + ":" + remotePort;
        }

        private static String address(byte[] a) {
            if (a.length == 4) return (a[0] & 0xff) + "." + (a[1] & 0xff) + "." + (a[2] & 0xff) + "." + (a[3] & 0xff);
            StringBuilder b = new StringBuilder("[");
            for (int i = 0; i < a.length; i += 2) b.append(i == 0 ? "" : ":").append(Integer.toHexString(((a[i] & 0xff) << 8) | (a[i + 1] & 0xff)));
            return b.append(']').toString();
        }
    }

    /** The TIME_WAIT entries of this thread's network namespace whose local port is {@code port} ({@code family}: AF_INET/6). */
    public static List<Entry> on(int family, int port) {
        return inState(family, port, TCP_TIME_WAIT);
    }

    /** The TCP listeners of this thread's network namespace on local port {@code port} (remote: all zero). */
    public static List<Entry> listeners(int family, int port) {
        return inState(family, port, TCP_LISTEN);
    }

    private static List<Entry> inState(int family, int port, int state) {
        int fd = Sockets.netlink(NETLINK_SOCK_DIAG);
        try (Arena arena = Arena.ofConfined()) {
            send(fd, arena, request(SOCK_DIAG_BY_FAMILY, (short) (NLM_F_REQUEST | NLM_F_DUMP), family, 1 << state, null));
            List<Entry> out = new ArrayList<>();
            MemorySegment buf = arena.allocate(1 << 16);
            while (true) {
                ByteBuffer in = buf.asSlice(0, Sockets.read(fd, buf, buf.byteSize())).asByteBuffer().order(ByteOrder.nativeOrder());
                while (in.remaining() >= HEADER) {
                    int start = in.position();
                    int len = in.getInt(start);
                    short type = in.getShort(start + 4);
                    if (type == NLMSG_DONE) return out;
                    if (type == NLMSG_ERROR) throw new SyscallException(-in.getInt(start + HEADER), "sock_diag dump of TCP sockets failed");
                    Entry e = entry(in, start + HEADER);
                    if (e.localPort() == port && in.get(start + HEADER + 1) == state) out.add(e);
                    if (len < HEADER) return out;
                    in.position(Math.min(in.limit(), start + ((len + 3) & ~3)));
                }
            }
        } finally {
            Syscalls.libc().close(fd);
        }
    }

    /** Removes one entry; a SyscallException (EOPNOTSUPP: a kernel without INET_DIAG_DESTROY; ENOENT: gone already). */
    public static void destroy(Entry e) {
        int fd = Sockets.netlink(NETLINK_SOCK_DIAG);
        try (Arena arena = Arena.ofConfined()) {
            send(fd, arena, request(SOCK_DESTROY, (short) (NLM_F_REQUEST | NLM_F_ACK), e.family(), 1 << TCP_TIME_WAIT, e));
            MemorySegment buf = arena.allocate(4096);
            ByteBuffer in = buf.asSlice(0, Sockets.read(fd, buf, buf.byteSize())).asByteBuffer().order(ByteOrder.nativeOrder());
            int err = in.getShort(4) == NLMSG_ERROR ? -in.getInt(HEADER) : 0;
            if (err != 0) throw new SyscallException(err, "SOCK_DESTROY of TIME_WAIT " + e + " failed");
        } finally {
            Syscalls.libc().close(fd);
        }
    }

    private static void send(int fd, Arena arena, ByteBuffer request) {
        MemorySegment seg = arena.allocate(request.capacity());
        seg.copyFrom(MemorySegment.ofBuffer(request.rewind()));
        Sockets.write(fd, seg, seg.byteSize());
    }

    /** nlmsghdr + inet_diag_req_v2 (the family's sockets in {@code states}; or exactly {@code e} for SOCK_DESTROY). */
    private static ByteBuffer request(short type, short flags, int family, int states, Entry e) {
        ByteBuffer b = ByteBuffer.allocate(REQUEST).order(ByteOrder.nativeOrder());
        b.putInt(REQUEST).putShort(type).putShort(flags).putInt(1).putInt(0);
        b.put((byte) family).put((byte) IPPROTO_TCP).put((byte) 0).put((byte) 0).putInt(states);
        ByteBuffer id = b.slice().order(ByteOrder.BIG_ENDIAN);
        if (e != null) {
            id.putShort((short) e.localPort()).putShort((short) e.remotePort());
            id.put(Arrays.copyOf(e.local(), 16)).put(Arrays.copyOf(e.remote(), 16));
            id.order(ByteOrder.nativeOrder()).putInt(0).putLong(e.cookie());
        }
        return b;
    }

    /** The sockid's ports are in network order, whatever the buffer's. */
    private static int bigEndianPort(ByteBuffer in, int at) {
        return (in.get(at) & 0xff) << 8 | in.get(at + 1) & 0xff;
    }

    /** inet_diag_msg at {@code at}: family, state, timer, retrans, the sockid (48 bytes), then expires (ms). */
    private static Entry entry(ByteBuffer in, int at) {
        int family = in.get(at) & 0xff;
        int size = family == AF_INET ? 4 : 16;
        int sport = bigEndianPort(in, at + 4);
        int dport = bigEndianPort(in, at + 6);
        byte[] src = new byte[size];
        byte[] dst = new byte[size];
        in.get(at + 8, src);
        in.get(at + 24, dst);
        long cookie = in.getLong(at + 44);
        long expires = Integer.toUnsignedLong(in.getInt(at + 52));
        return new Entry(family, src, sport, dst, dport, cookie, expires);
    }
}

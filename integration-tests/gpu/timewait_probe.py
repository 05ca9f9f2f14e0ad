"""Does a TIME_WAIT connection on a listener's port block criu's restore of that listener, and can it be removed?

Makes a listener on 127.0.0.1 (no SO_REUSEADDR, as NCCL's), a connection to it that the listener's side closes
first (so the TIME_WAIT entry holds the listener's port), closes the listener, then binds a new socket to the port
the way criu restores one (SO_REUSEADDR and SO_REUSEPORT set first). Then asks the kernel to destroy the TIME_WAIT
entry (sock_diag SOCK_DESTROY, CONFIG_INET_DIAG_DESTROY) and binds again. Prints one line per step.
"""
import errno
import socket
import struct

NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, SOCK_DESTROY = 4, 20, 21
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 1, 4, 0x300
TCP_TIME_WAIT = 6


def criu_bind(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        s.bind(("127.0.0.1", port))
        return "bound"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()


def diag_request(kind, flags, sport, dport=0, cookie=(0, 0), states=1 << TCP_TIME_WAIT):
    src = socket.inet_aton("127.0.0.1") + b"\0" * 12
    sockid = struct.pack("!HH", sport, dport) + src + (src if dport else b"\0" * 16) + struct.pack("=III", 0, *cookie)
    body = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, states) + sockid
    return struct.pack("=IHHII", 16 + len(body), kind, flags, 1, 0) + body


def timewait_on(port):
    nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
    nl.send(diag_request(SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 0))
    found = []
    while True:
        data = nl.recv(65536)
        off, done = 0, False
        while off < len(data):
            length, kind = struct.unpack_from("=IH", data, off)
            if kind == 3:  # NLMSG_DONE
                done = True
                break
            family, state = struct.unpack_from("=BB", data, off + 16)
            sport, dport = struct.unpack_from("!HH", data, off + 20)
            cookie = struct.unpack_from("=II", data, off + 20 + 4 + 32 + 4)
            if state == TCP_TIME_WAIT and sport == port:
                found.append((sport, dport, cookie))
            off += (length + 3) & ~3
        if done:
            return found


def destroy(sport, dport, cookie):
    nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
    nl.send(diag_request(SOCK_DESTROY, NLM_F_REQUEST | NLM_F_ACK, sport, dport, cookie))
    data = nl.recv(65536)
    err = struct.unpack_from("=i", data, 16)[0]
    return "ok" if err == 0 else errno.errorcode.get(-err, str(err))


def main():
    lsn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(1)
    port = lsn.getsockname()[1]
    cli = socket.create_connection(("127.0.0.1", port))
    srv, _ = lsn.accept()
    srv.close()  # the listener's side closes first: its TIME_WAIT entry keeps the listener's port
    cli.recv(1)
    cli.close()
    lsn.close()
    tw = timewait_on(port)
    print(f"port {port}: {len(tw)} TIME_WAIT entr{'y' if len(tw) == 1 else 'ies'} on it")
    print(f"bind as criu restores a listener: {criu_bind(port)}")
    for sport, dport, cookie in tw:
        print(f"SOCK_DESTROY of TIME_WAIT {sport}->{dport}: {destroy(sport, dport, cookie)}")
    print(f"TIME_WAIT left: {len(timewait_on(port))}; bind again: {criu_bind(port)}")


if __name__ == "__main__":
    main()

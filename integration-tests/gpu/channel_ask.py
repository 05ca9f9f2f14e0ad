"""The plugin's side of criu_gpu's channel, for run-channel.sh (a single rank is never asked by a dump: it has no
peer). usage: channel_ask.py ask PID | clear PID | show PID. It finds the rank's memfd in /proc/PID/fd, takes the
rank's own descriptor with pidfd_getfd (as root, as the plugin does) and checks its seals; `ask` writes a token and
waits (60 s at most) until the rank answers it and has no pt_nccl thread left; `show` prints "request=R released=A"."""
import ctypes
import fcntl
import os
import random
import struct
import sys
import time

LIBC = ctypes.CDLL(None, use_errno=True)
SEALS = 1 | 2 | 4


def channel(pid):
    for n in os.listdir(f"/proc/{pid}/fd"):
        if os.readlink(f"/proc/{pid}/fd/{n}") == "/memfd:criu_gpu (deleted)":
            pidfd = os.pidfd_open(pid)
            fd = LIBC.syscall(438, pidfd, int(n), 0)   # pidfd_getfd
            os.close(pidfd)
            if fd < 0:
                sys.exit(f"pidfd_getfd of fd {n} of pid {pid}: errno {ctypes.get_errno()}")
            seals = fcntl.fcntl(fd, 1034)   # F_GET_SEALS
            if seals != SEALS or os.fstat(fd).st_size != 64:
                sys.exit(f"pid {pid}'s channel has seals {seals}, size {os.fstat(fd).st_size}")
            return fd
    sys.exit(f"pid {pid} has no criu_gpu channel")


def word(fd, at):
    return struct.unpack("<I", os.pread(fd, 4, at))[0]


def nccl_threads(pid):
    n = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                n += f.read().startswith("pt_nccl")
        except OSError:
            pass
    return n


def main():
    what, pid = sys.argv[1], int(sys.argv[2])
    fd = channel(pid)
    if what == "clear":
        os.pwrite(fd, struct.pack("<I", 0), 12)
    elif what == "show":
        print(f"request={word(fd, 12)} released={word(fd, 16)}")
    else:
        token = random.randint(1, 2**31 - 1)
        t0 = time.monotonic()
        os.pwrite(fd, struct.pack("<I", token), 12)
        while word(fd, 16) != token or nccl_threads(pid):
            if time.monotonic() - t0 > 60:
                sys.exit(f"pid {pid} did not release within 60 s (released={word(fd, 16)}, {nccl_threads(pid)} pt_nccl threads)")
            time.sleep(0.02)
        print(f"released token={token} in {time.monotonic() - t0:.2f} s")


if __name__ == "__main__":
    main()

"""A stand-in NCCL rank for CommReleaseTest: a thread named as PyTorch's NCCL watchdog (so the process reads as a
rank on NCCL's defaults) and, by RANK_MODE, a criu_gpu channel that answers the plugin as criu_gpu does (answer), one
that never answers (silent), none at all (none), or a descriptor that only looks like a channel: a memfd of that name
without the seals (unsealed), the real channel held read-only (readonly), a deleted regular file at /memfd:criu_gpu
(file, root only). It prints "ready", and "released" / "going on" as it answers."""
import ctypes
import os
import struct
import sys
import threading
import time

import criu_gpu


def say(line):
    os.write(1, (line + "\n").encode())


def watchdog(stop):
    ctypes.CDLL(None).prctl(15, b"pt_nccl_watchdg", 0, 0, 0)   # PR_SET_NAME of this thread
    stop.wait()


def lookalike(mode):
    header = struct.pack("<8sIII", b"criu_gpu", 1, 0, 0).ljust(64, b"\0")
    if mode == "unsealed":
        fd = os.memfd_create("criu_gpu", os.MFD_ALLOW_SEALING)
    elif mode == "file":
        fd = os.open("/memfd:criu_gpu", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.unlink("/memfd:criu_gpu")
    else:   # readonly
        real = criu_gpu._own_channel().fd
        fd = os.open(f"/proc/self/fd/{real}", os.O_RDONLY)
        os.close(real)
        return fd
    os.pwrite(fd, header, 0)
    return fd


def main():
    mode = os.environ["RANK_MODE"]
    channel = criu_gpu._own_channel() if mode in ("answer", "silent") else None
    keep = lookalike(mode) if mode in ("unsealed", "file", "readonly") else None
    stop = threading.Event()
    nccl = threading.Thread(target=watchdog, args=(stop,), daemon=True)
    if os.environ.get("NCCL_THREAD", "1") == "1":
        nccl.start()
    say("ready")
    if mode == "answer":
        while channel.requested() == 0:
            time.sleep(0.005)
        stop.set()
        if nccl.is_alive():
            nccl.join()
        channel.answer(channel.requested())
        say("released")
        while channel.requested() != 0:
            time.sleep(0.005)
        say("going on")
    threading.Event().wait()
    return keep


if __name__ == "__main__":
    sys.exit(main())

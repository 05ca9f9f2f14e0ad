"""A stand-in for the few torch calls criu_gpu makes, for CriuGpuPackageTest (no GPU, no torch on the test host).

Tensors hold one int; the CUDA calls do nothing; torch.distributed (distributed/) is the part that matters: its
collectives really combine the ranks' values (through files), and its process group runs a thread named as
PyTorch's NCCL watchdog while it lives, as the plugin looks for.
"""
import os

int32 = "int32"


class device:
    def __init__(self, kind, index=0):
        self.type, self.index = kind, index


class _Tensor:
    def __init__(self, value=0):
        self.value = value

    def fill_(self, v):
        self.value = int(v)
        return self

    def copy_(self, other, non_blocking=False):
        self.value = other.value
        return self

    def pin_memory(self):
        return self

    def item(self):
        return self.value


def zeros(n, dtype=None, device=None):
    return _Tensor(0)


class cuda:
    class Event:
        def record(self):
            pass

        def synchronize(self):
            pass

    @staticmethod
    def synchronize(device=None):
        pass

    @staticmethod
    def empty_cache():
        os.write(1, f"rank {os.environ.get('RANK')} cache emptied\n".encode())

"""A DDP-shaped job for CriuGpuPackageTest on the stand-in torch: started without RANK it launches WORLD_SIZE ranks
(exec of itself) and waits; a rank registers a stand-in DDP with criu_gpu.checkpointable and steps on, printing
"rank R step N" after each forward and "rank R group K" each time its DDP gets another process group."""
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist


class FakeDDP:
    class _Param:
        device = torch.device("cuda", 0)

    class _Module:
        def parameters(self):
            return iter([FakeDDP._Param()])

    def __init__(self):
        self.module = FakeDDP._Module()
        self.hooks = []

    def register_forward_pre_hook(self, hook):
        self.hooks.append(hook)

    def _update_process_group(self, pg):
        say(f"rank {dist.get_rank()} group {pg[1]}")

    def __call__(self, x):
        for h in self.hooks:
            h(self, (x,))
        time.sleep(0.005)


def say(line):
    os.write(1, (line + "\n").encode())


def main():
    if "RANK" not in os.environ:
        ranks = [subprocess.Popen([sys.executable, __file__], env=dict(os.environ, RANK=str(r)))
                 for r in range(int(os.environ["WORLD_SIZE"]))]
        return max(p.wait() for p in ranks)
    import criu_gpu
    dist.init_process_group("nccl")
    ddp = criu_gpu.checkpointable(FakeDDP(), every=2)
    say(f"rank {dist.get_rank()} pid {os.getpid()}")
    for step in range(100000):
        ddp(step)
        say(f"rank {dist.get_rank()} step {step}")


if __name__ == "__main__":
    sys.exit(main())

"""Deterministic PyTorch training loop for checkpoint tests.

Prints "step N loss HEX" (float.hex of the loss, exact) once per step and "done steps=S" at the end, so a run
restored mid-way can be compared line by line with an uninterrupted one.

With --workers W the inputs come from a torch DataLoader with W worker processes fork()ed from this one after CUDA
is initialised (Linux's default): they hold its /dev/nvidia* descriptors and mappings without CUDA state of their
own. --persistent keeps them for the whole run; without it, new workers are forked every epoch of --epoch-steps.

usage: python3 torch_train.py [--steps S] [--pace-ms P] [--hidden H] [--workers W [--persistent] [--epoch-steps E]]
"""
import argparse
import os
import sys
import time

# cuBLAS needs this before CUDA initialises for deterministic results.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--pace-ms", type=int, default=100, help="pause after each step (pacing, not synchronisation)")
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes (0: inputs made on the GPU)")
    p.add_argument("--persistent", action="store_true", help="keep the workers for the whole run")
    p.add_argument("--epoch-steps", type=int, default=10, help="batches per epoch of the DataLoader")
    return p.parse_args()


class Inputs(torch.utils.data.Dataset):
    """Batch i of an epoch, made on the CPU from a seed that depends only on (epoch, i): the same in every run."""

    def __init__(self, length):
        self.length = length
        self.epoch = 0

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(1000 * self.epoch + i)
        return torch.randn(512, 256, generator=g)


def batches(args):
    """Endless (epoch, batch) inputs on the CPU from a DataLoader whose workers are fork()ed children."""
    data = Inputs(args.epoch_steps)
    loader = torch.utils.data.DataLoader(data, batch_size=None, shuffle=False, num_workers=args.workers,
                                         persistent_workers=args.persistent, multiprocessing_context="fork")
    epoch = 0
    while True:
        data.epoch = epoch  # read by workers forked this epoch (non-persistent); persistent ones keep epoch 0
        for x in loader:
            yield x
        epoch += 1


def make_deterministic(seed):
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def main():
    args = parse_args()
    make_deterministic(1234)
    dev = torch.device("cuda", 0)
    gen = torch.Generator(device=dev)
    gen.manual_seed(99)

    model = torch.nn.Sequential(
        torch.nn.Linear(256, args.hidden),
        torch.nn.GELU(),
        torch.nn.LayerNorm(args.hidden),
        torch.nn.Linear(args.hidden, args.hidden),
        torch.nn.GELU(),
        torch.nn.Linear(args.hidden, 10),
    ).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    teacher = torch.randn(256, 10, device=dev, generator=gen)

    print(f"ready pid={os.getpid()} torch={torch.__version__}", flush=True)
    inputs = batches(args) if args.workers else None
    for step in range(args.steps):
        x = next(inputs).to(dev) if inputs else torch.randn(512, 256, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item().hex()}", flush=True)
        if args.pace_ms:
            time.sleep(args.pace_ms / 1000)
    print(f"done steps={args.steps}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

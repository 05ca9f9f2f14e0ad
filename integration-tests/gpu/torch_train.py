"""Deterministic PyTorch training loop for checkpoint tests.

Prints "step N loss HEX" (float.hex of the loss, exact) once per step and "done steps=S" at the end, so a run
restored mid-way can be compared line by line with an uninterrupted one.

usage: python3 torch_train.py [--steps S] [--pace-ms P] [--hidden H]
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
    return p.parse_args()


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
    for step in range(args.steps):
        x = torch.randn(512, 256, device=dev, generator=gen)
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

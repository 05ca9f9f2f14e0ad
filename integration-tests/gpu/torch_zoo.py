#!/usr/bin/env python3
"""PyTorch in the feature zoo (cases_zoo.sh): on every visible GPU a cuBLAS matmul and a cuDNN convolution on fixed
inputs, the result copied to the next GPU and back (peer copies where there are two); each tick's digest must equal
the first tick's. Lines as cuda_zoo.py's: "[z PID] ready ...", "tick N ok" or "tick N BAD ...", "exit ...".

usage: torch_zoo.py [--tick-ms 50]
"""
import argparse
import hashlib

import torch

import zoo_loop


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tick-ms", type=int, default=50)
    args = ap.parse_args()
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True)
    n = torch.cuda.device_count()
    g = torch.Generator().manual_seed(7)
    mats = [torch.randn(1024, 1024, generator=g).to(f"cuda:{k}") for k in range(n)]
    imgs = [torch.randn(8, 16, 64, 64, generator=g).to(f"cuda:{k}") for k in range(n)]
    convs = []
    for k in range(n):
        conv = torch.nn.Conv2d(16, 32, 3, padding=1)
        with torch.no_grad():
            conv.weight.copy_(torch.randn(conv.weight.shape, generator=g))
            conv.bias.copy_(torch.randn(conv.bias.shape, generator=g))
        convs.append(conv.to(f"cuda:{k}"))

    def digest():
        h = hashlib.sha256()
        with torch.no_grad():
            for k in range(n):
                y = torch.tanh(mats[k] @ mats[k] / 1024)
                z = convs[k](imgs[k])
                y = y.to(f"cuda:{(k + 1) % n}").to(f"cuda:{k}")
                h.update(y.cpu().numpy().tobytes())
                h.update(z.cpu().numpy().tobytes())
        return h.hexdigest()[:16]

    zoo_loop.run(f"feature=torch gpus={n} torch={torch.__version__}", digest, args.tick_ms)


if __name__ == "__main__":
    main()

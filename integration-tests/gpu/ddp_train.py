"""Deterministic multi-rank PyTorch DDP job (NCCL) for checkpoint tests: back-to-back steps, no pause.

Started without RANK in the environment it is the launcher: it starts --ranks ranks as new processes (exec of this
script, as a plain launcher does) and waits for them. Started by torchrun (RANK set) it is one rank.
Each rank holds --extra-mib MiB of device memory filled with a pattern that depends on its rank, prints
"[rank R] step N loss HEX" (float.hex: exact) after every step, "[rank R] extra=bad at step N" when the pattern
(checked every 200 steps) is gone, and at the end "[rank R] done steps=S extra=ok|bad". With --empty-cache a rank
hands PyTorch's cached free blocks back to the driver after each check (torch.cuda.empty_cache()), as a job would
before a planned dump: what the driver checkpoints is then what the rank's tensors hold.
With DDP_CRIU_GPU=1 in the environment the DDP wrapper is registered with criu_gpu.checkpointable (the plugin dir's
python/ on PYTHONPATH): the ranks release their NCCL communicators when a dump asks (issue 44).
Losses depend only on (rank, step), so a job restored mid-way can be compared with an uninterrupted one.

usage: python3 ddp_train.py [--ranks N] [--steps S] [--extra-mib M] [--hidden H] [--port P] [--empty-cache]
"""
import argparse
import os
import subprocess
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--extra-mib", type=int, default=2048)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--port", type=int, default=29511)
    p.add_argument("--empty-cache", action="store_true")
    return p.parse_args()


def say(line):
    """One write(2) per line: the ranks share the launcher's output file, and print() may split a line in two."""
    os.write(1, (line + "\n").encode())


def launch(args):
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), WORLD_SIZE=str(args.ranks))
    ranks = []
    for r in range(args.ranks):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        ranks.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env=e))
    say(f"launcher pid={os.getpid()} ranks={[p.pid for p in ranks]}")
    return max(p.wait() for p in ranks)


def rank_main(args):
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.manual_seed(1234)
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    model = torch.nn.Sequential(torch.nn.Linear(512, args.hidden), torch.nn.GELU(),
                                torch.nn.Linear(args.hidden, args.hidden), torch.nn.GELU(),
                                torch.nn.Linear(args.hidden, 10)).to(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
    if os.environ.get("DDP_CRIU_GPU") == "1":
        import criu_gpu
        ddp = criu_gpu.checkpointable(ddp)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-2)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = args.extra_mib * (1 << 20) // 4
    extra = torch.arange(n, device=dev, dtype=torch.int32) * 7 + rank
    gen = torch.Generator(device=dev)
    gen.manual_seed(99 + rank)
    teacher = torch.randn(512, 10, device=dev, generator=torch.Generator(device=dev).manual_seed(7))
    say(f"[rank {rank}] ready pid={os.getpid()} device={local} torch={torch.__version__}")
    for step in range(args.steps):
        x = torch.randn(1024, 512, device=dev, generator=gen)
        y = (x @ teacher).argmax(dim=1)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        say(f"[rank {rank}] step {step} loss {loss.item().hex()}")
        if step % 200 == 199 and not torch.equal(extra, torch.arange(n, device=dev, dtype=torch.int32) * 7 + rank):
            say(f"[rank {rank}] extra=bad at step {step}")
        if step % 200 == 199 and args.empty_cache:
            torch.cuda.empty_cache()
    ok = bool(torch.equal(extra, torch.arange(n, device=dev, dtype=torch.int32) * 7 + rank))
    say(f"[rank {rank}] done steps={args.steps} extra={'ok' if ok else 'bad'}")
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    a = parse_args()
    sys.exit(rank_main(a) if "RANK" in os.environ else launch(a))

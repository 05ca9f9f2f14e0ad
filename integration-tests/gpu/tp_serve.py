"""Deterministic tensor-parallel server for checkpoint tests: a model whose every layer is split over the ranks
(column-parallel, then row-parallel with an NCCL all-reduce per layer), answering requests in a loop.

Started without RANK it is the launcher (plain: one new process per rank). Rank 0 makes request i from a seed (the same
in every run), hands it to the other ranks and prints "[serve] answer i HEX" (float.hex of the output's sum: exact).
--wait-in says where the ranks wait for the next request: "host" (a gloo broadcast on the CPU: a dump can lock them
between requests) or "nccl" (an NCCL broadcast: ranks other than 0 idle inside a GPU collective, which no driver can
lock). --pace-ms is the pause before each request (the server idles, as one waiting for clients).

usage: python3 tp_serve.py [--ranks N] [--requests R] [--pace-ms P] [--wait-in host|nccl] [--hidden H] [--layers L]
"""
import argparse
import os
import subprocess
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def say(line):
    os.write(1, (line + "\n").encode())


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--pace-ms", type=int, default=50)
    p.add_argument("--wait-in", choices=["host", "nccl"], default="host")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--port", type=int, default=29711)
    return p.parse_args()


def launch(args):
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), WORLD_SIZE=str(args.ranks))
    ranks = [subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(args.ranks)]
    say(f"launcher pid={os.getpid()} ranks={[p.pid for p in ranks]}")
    return max(p.wait() for p in ranks)


def serve(args):
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    host = dist.new_group(backend="gloo")
    shard = args.hidden // world
    g = torch.Generator(device=dev).manual_seed(1000 + rank)
    # layer l: x (hidden) -> column shard (shard) -> GELU -> row shard back to hidden, summed over the ranks
    ups = [torch.randn(args.hidden, shard, device=dev, generator=g) / args.hidden ** 0.5 for _ in range(args.layers)]
    downs = [torch.randn(shard, args.hidden, device=dev, generator=g) / shard ** 0.5 for _ in range(args.layers)]
    say(f"[rank {rank}] ready pid={os.getpid()} device={rank} wait-in={args.wait_in}")
    for i in range(args.requests):
        if rank == 0:
            time.sleep(args.pace_ms / 1000)
            req = torch.randn(8, args.hidden, generator=torch.Generator().manual_seed(i))
        else:
            req = torch.empty(8, args.hidden)
        if args.wait_in == "host":
            dist.broadcast(req, src=0, group=host)
            x = req.to(dev)
        else:
            x = req.to(dev)
            dist.broadcast(x, src=0)
        for up, down in zip(ups, downs):
            part = torch.nn.functional.gelu(x @ up) @ down
            dist.all_reduce(part)
            x = torch.nn.functional.layer_norm(x + part, (args.hidden,))
        if rank == 0:
            say(f"[serve] answer {i} {x.double().sum().item().hex()}")
    say(f"[rank {rank}] done requests={args.requests}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    a = parse_args()
    sys.exit(serve(a) if "RANK" in os.environ else launch(a))

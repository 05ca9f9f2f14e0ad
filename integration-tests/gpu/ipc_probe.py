"""What /proc shows of a CUDA tensor shared through torch.multiprocessing (issue 55): a parent makes a CUDA tensor
and puts it on an mp.Queue to a spawned child, which keeps it. Prints "exporter PID importer PID" once the child
holds it, then both sleep until killed."""
import os
import time

import torch
import torch.multiprocessing as mp


def serve(q, ready):
    t = q.get()
    ready.put((os.getpid(), float(t.sum())))
    while True:
        time.sleep(1)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    q, ready = mp.Queue(), mp.Queue()
    t = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    child = mp.Process(target=serve, args=(q, ready))
    child.start()
    q.put(t)
    pid, total = ready.get()
    print(f"exporter {os.getpid()} importer {pid} sum {total}", flush=True)
    while True:
        time.sleep(1)

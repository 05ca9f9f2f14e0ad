"""torch.distributed as criu_gpu uses it, across real processes: all_reduce(MAX) combines the ranks' values through
files in $STUB_DIR (every rank calls the collectives in the same order, as NCCL's ranks must); a process group runs a
thread that names itself pt_nccl_watchdg until destroy_process_group stops it."""
import ctypes
import os
import threading
import time

from . import distributed_c10d


class ReduceOp:
    MAX = "max"


class PrefixStore:
    def __init__(self, prefix, store):
        self.prefix, self.store = prefix, store


class _Group:
    WORLD = None


group = _Group()
_state = {"calls": 0, "rank": None, "world": None, "watchdog": None, "stop": None, "inits": 0}


def _watchdog(stop):
    ctypes.CDLL(None).prctl(15, b"pt_nccl_watchdg", 0, 0, 0)   # PR_SET_NAME, as PyTorch names its thread
    while not stop.wait(0.01):
        pass


def init_process_group(backend, store=None, rank=None, world_size=None, device_id=None):
    _state["rank"] = int(os.environ["RANK"]) if rank is None else rank
    _state["world"] = int(os.environ["WORLD_SIZE"]) if world_size is None else world_size
    stop = threading.Event()
    t = threading.Thread(target=_watchdog, args=(stop,), daemon=True)
    t.start()
    _state["watchdog"], _state["stop"] = t, stop
    _state["inits"] += 1
    group.WORLD = ("group", _state["inits"])
    distributed_c10d._default_store = store or ("store", 0)


def destroy_process_group():
    _state["stop"].set()
    _state["watchdog"].join()
    group.WORLD = None


def get_rank():
    return _state["rank"]


def get_world_size():
    return _state["world"]


def all_reduce(tensor, op=None):
    _state["calls"] += 1
    d = os.environ["STUB_DIR"]
    mine = os.path.join(d, f"ar.{_state['calls']}.{_state['rank']}")
    with open(mine + ".tmp", "w") as f:
        f.write(str(tensor.value))
    os.rename(mine + ".tmp", mine)
    values = []
    for r in range(_state["world"]):
        p = os.path.join(d, f"ar.{_state['calls']}.{r}")
        while not os.path.exists(p):
            time.sleep(0.002)
        with open(p) as f:
            values.append(int(f.read()))
    tensor.value = max(values)

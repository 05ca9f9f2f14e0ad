"""NVLink P2P for training, gone for the length of a checkpoint (criu-java-gpu's CUDA plugin, issue 44).

The CUDA driver (r580) cannot put back a process that maps memory another rank shares with it, which is what NCCL's
P2P transport over NVLink does. A DDP job that calls

    ddp = criu_gpu.checkpointable(ddp)

once after making its DistributedDataParallel keeps NCCL's defaults (P2P on) while it trains. When `criu dump` is
started on the job, the plugin asks each rank to release; the ranks agree on a step (every `every`-th forward, a
one-element all-reduce runs beside the job's own, read back one check later, so no rank waits on the host), destroy
their process group there, and wait. The dump locks and checkpoints ranks that hold nothing of each other's; when
criu is done (after `-R`, or in the process restored from the images) the ranks make a new process group on the same
store and DDP goes on with it. A rank that is never asked costs one tiny all-reduce every `every` forwards.

What is exchanged with the plugin: the directory /dev/shm/criu-gpu/PID (PID as the rank sees itself, mode 0700, the
rank's own): the plugin creates `request` in it, the rank writes `released` once its communicators are gone and
goes on once `request` is removed again: criu's exit removes it before the tree runs again; should criu be killed
first, the rank goes on by itself CRIU_GPU_RELEASE_WAIT_S seconds (default 900) after its release. Only the default process group is released and made again: a job that made
groups of its own (dist.new_group) must not use this. Logs go to stderr, one line each.
"""
import os
import sys
import time

CONTROL_ROOT = "/dev/shm/criu-gpu"


def _say(line):
    os.write(2, (f"criu_gpu[{os.getpid()}]: {line}\n").encode())


def _control_dir():
    """This process's control directory, made if missing; None (with a line saying why) where it cannot be ours."""
    try:
        os.makedirs(CONTROL_ROOT, exist_ok=True)
        st = os.lstat(CONTROL_ROOT)
        if st.st_uid == os.geteuid():
            os.chmod(CONTROL_ROOT, 0o1777)   # one directory for every user's ranks, each its own inside (as /tmp)
        d = os.path.join(CONTROL_ROOT, str(os.getpid()))
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(d)
        import stat
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            _say(f"{d} is not a directory of this user's: communicators are not released for checkpoints")
            return None
        for stale in ("request", "released"):   # left by a process of the same pid before
            try:
                os.unlink(os.path.join(d, stale))
            except FileNotFoundError:
                pass
        return d
    except OSError as e:
        _say(f"cannot make {CONTROL_ROOT}/{os.getpid()}: {e}; communicators are not released for checkpoints")
        return None


def _nccl_threads_gone(timeout_s):
    """Waits until no thread of this process is one of PyTorch's NCCL threads (pt_nccl_*); how many are left."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = 0
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    left += f.read().startswith("pt_nccl")
            except OSError:
                pass   # ended meanwhile
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.01)


class _Release:
    def __init__(self, ddp, every):
        import torch
        import torch.distributed as dist
        self.torch, self.dist = torch, dist
        self.ddp = ddp
        self.every = max(1, int(every))
        self.dir = _control_dir()
        self.calls = 0
        self.generation = 0
        self.pending = None
        self.device = next(ddp.module.parameters()).device
        self.flag = torch.zeros(1, dtype=torch.int32, device=self.device)
        self.host = torch.zeros(1, dtype=torch.int32).pin_memory()
        self.event = torch.cuda.Event()
        self.store = dist.distributed_c10d._get_default_store()
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()

    def before_forward(self, module, args):
        self.calls += 1
        if self.dir is None or self.calls % self.every:
            return
        if self.pending is not None:
            self.event.synchronize()   # enqueued `every` forwards ago: long done
            asked = int(self.host.item())
            self.pending = None
            if asked:
                self.release_and_rebuild()
        self.flag.fill_(1 if os.path.exists(os.path.join(self.dir, "request")) else 0)
        self.dist.all_reduce(self.flag, op=self.dist.ReduceOp.MAX)
        self.host.copy_(self.flag, non_blocking=True)
        self.event.record()
        self.pending = True

    def release_and_rebuild(self):
        torch, dist = self.torch, self.dist
        t0 = time.monotonic()
        torch.cuda.synchronize(self.device)
        dist.destroy_process_group()
        torch.cuda.synchronize(self.device)
        left = _nccl_threads_gone(10.0)   # the plugin looks for them too: they end soon after the group's shutdown
        released = os.path.join(self.dir, "released")
        with open(released, "w") as f:
            f.write(f"{self.calls}\n")
        _say(f"rank {self.rank}: NCCL communicators released for a checkpoint in {time.monotonic() - t0:.2f} s"
             + (f" ({left} of PyTorch's NCCL threads still running: the dump will be refused)" if left else ""))
        request = os.path.join(self.dir, "request")
        limit = float(os.environ.get("CRIU_GPU_RELEASE_WAIT_S", "900"))
        while os.path.exists(request):
            # criu's exit removes it before the tree runs again; still there this long after, criu was killed
            if time.monotonic() - t0 > limit:
                _say(f"rank {self.rank}: no dump ended within {limit:.0f} s of the release (criu killed?): going on")
                try:
                    os.unlink(request)
                except FileNotFoundError:
                    pass
                break
            time.sleep(0.02)
        t1 = time.monotonic()
        try:
            os.unlink(released)
        except FileNotFoundError:   # restored where the directory did not come along
            pass
        self.dir = _control_dir() or self.dir
        self.generation += 1
        dist.init_process_group("nccl", store=dist.PrefixStore(f"criu-gpu/{self.generation}", self.store),
                                rank=self.rank, world_size=self.world, device_id=self.device)
        self.ddp._update_process_group(dist.group.WORLD)
        _say(f"rank {self.rank}: NCCL communicators made again in {time.monotonic() - t1:.2f} s")


def checkpointable(ddp, every=10):
    """Registers the release with `ddp` (a DistributedDataParallel on NCCL's default process group); returns `ddp`."""
    if not hasattr(ddp, "_update_process_group"):
        _say("this PyTorch's DistributedDataParallel cannot change its process group: not released for checkpoints")
        return ddp
    release = _Release(ddp, every)
    ddp.register_forward_pre_hook(release.before_forward)
    ddp._criu_gpu_release = release
    return ddp

"""NVLink P2P for training, gone for the length of a checkpoint (criu-java-gpu's CUDA plugin, issue 44).

The CUDA driver (r580) cannot put back a process that maps memory another rank shares with it, which is what NCCL's
P2P transport over NVLink does. A DDP job that calls

    ddp = criu_gpu.checkpointable(ddp)

once after making its DistributedDataParallel keeps NCCL's defaults (P2P on) while it trains. When `criu dump` is
started on the job, the plugin asks each rank to release; the ranks agree on a step (every `every`-th forward, a
one-element all-reduce runs beside the job's own, read back one check later, so no rank waits on the host), destroy
their process group there, and wait. The dump locks and checkpoints ranks that hold nothing of each other's; once
criu has frozen the tree it takes the request back, so that when the ranks run again (after `-R`, or in the process
restored from the images) they make a new process group on the same store and DDP goes on with it. Should criu be
killed before that, a rank goes on by itself CRIU_GPU_RELEASE_WAIT_S seconds (default 900) after its release. A rank
that is never asked costs one tiny all-reduce every `every` forwards.

The channel with the plugin is a memfd each rank makes for itself at its first `checkpointable` (`/memfd:criu_gpu`
in /proc/PID/fd, 64 bytes, sealed against resizing): the plugin, as root, takes the rank's own descriptor of it with
pidfd_getfd and writes its request there; the rank answers in the same file. Nothing is opened by name in /dev/shm or
anywhere else, so no other user or container can redirect or fake what either side reads or writes, two jobs never
share a channel whatever pids they see, and nothing is left behind: the memfd ends with the rank. Do not close the
descriptor, pass it to another process, or make a memfd named "criu_gpu" of your own. Only the default process group
is released and made again: a job that made groups of its own (dist.new_group) must not use this. Logs go to stderr,
one line each; an error of the channel turns the release off for that rank and never stops the job.

`__version__` is the plugin version this package is for (PEP 440's spelling; `PLUGIN_VERSION` is Maven's, as in
the plugin dir's java/VERSION); both are None in the source tree, where the build has not written _version.py. At
import the package compares PLUGIN_VERSION with the java/VERSION of the plugin dir it goes with (CRIU_GPU_PLUGIN_DIR
if set, else the plugin dir this copy lies in, else criu's default /usr/lib/criu) and says so in one line on stderr
only where they differ; where that file is absent (a rank in a container) it says nothing.
"""
import fcntl
import os
import struct
import time

_NAME = "criu_gpu"
_MAGIC = b"criu_gpu"
_VERSION = 1
_SIZE = 64
_REQUEST = 12    # the plugin's: a dump's token, 0 for none
_RELEASED = 16   # the rank's: the token it released its communicators for
_F_ADD_SEALS = getattr(fcntl, "F_ADD_SEALS", 1033)
_SEALS = getattr(fcntl, "F_SEAL_SEAL", 1) | getattr(fcntl, "F_SEAL_SHRINK", 2) | getattr(fcntl, "F_SEAL_GROW", 4)


def _say(line):
    os.write(2, (f"criu_gpu[{os.getpid()}]: {line}\n").encode())


try:
    from ._version import __version__, PLUGIN_VERSION
except ImportError:   # the source tree: only the build writes _version.py
    __version__ = PLUGIN_VERSION = None


def _plugin_version_file():
    """The java/VERSION of the plugin dir this package goes with (see the module's doc); it need not exist."""
    plugin_dir = os.environ.get("CRIU_GPU_PLUGIN_DIR")
    if not plugin_dir:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # PLUGIN_DIR/python for its own copy
        own = os.path.dirname(here)
        own_file = os.path.join(own, "java", "VERSION")
        plugin_dir = own if os.path.basename(here) == "python" and os.path.isfile(own_file) else "/usr/lib/criu"
    return os.path.join(plugin_dir, "java", "VERSION")


def _check_plugin_version():
    if PLUGIN_VERSION is None:
        return
    path = _plugin_version_file()
    try:
        with open(path) as f:
            installed = f.read().strip()
    except OSError:
        return   # no plugin here to compare with
    if installed != PLUGIN_VERSION:
        python_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(path))), "python")
        _say(f"this criu_gpu {PLUGIN_VERSION} is not for the plugin {installed} ({path}): install the plugin's "
             f"(pip install {python_dir}/criu_gpu-*.whl) or put {python_dir} on PYTHONPATH")


_check_plugin_version()


class _Channel:
    """This process's end of the channel: a sealed memfd only it (and root, through pidfd_getfd) can reach."""

    def __init__(self):
        fd = os.memfd_create(_NAME, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, _SIZE)
            os.pwrite(fd, struct.pack("<8sIII", _MAGIC, _VERSION, 0, 0), 0)
            fcntl.fcntl(fd, _F_ADD_SEALS, _SEALS)
        except OSError:
            os.close(fd)
            raise
        self.fd = fd

    def _word(self, at):
        return struct.unpack("<I", os.pread(self.fd, 4, at))[0]

    def requested(self):
        return self._word(_REQUEST)

    def answer(self, token):
        os.pwrite(self.fd, struct.pack("<I", token), _RELEASED)

    def withdraw(self):
        os.pwrite(self.fd, struct.pack("<I", 0), _REQUEST)


_channel = None


def _own_channel():
    """The process's channel, made once; None (with a line saying why) where it cannot be made."""
    global _channel
    if _channel is None:
        try:
            _channel = _Channel()
        except (OSError, AttributeError) as e:   # AttributeError: a Python without os.memfd_create
            _say(f"cannot make the criu_gpu channel: {e}; communicators are not released for checkpoints")
            return None
    return _channel


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
        self.channel = _own_channel()
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

    def _asked(self):
        """Whether the plugin asks now; a channel that fails is turned off (this rank then never asks)."""
        if self.channel is None:
            return False
        try:
            return self.channel.requested() != 0
        except OSError as e:
            _say(f"rank {self.rank}: the criu_gpu channel failed ({e}): communicators are no longer released")
            self.channel = None
            return False

    def before_forward(self, module, args):
        self.calls += 1
        if self.calls % self.every:
            return
        if self.pending is not None:
            self.event.synchronize()   # enqueued `every` forwards ago: long done
            asked = int(self.host.item())
            self.pending = None
            if asked:
                self.release_and_rebuild()
        # every rank takes part, opted in or not: the all-reduce is collective
        self.flag.fill_(1 if self._asked() else 0)
        self.dist.all_reduce(self.flag, op=self.dist.ReduceOp.MAX)
        self.host.copy_(self.flag, non_blocking=True)
        self.event.record()
        self.pending = True

    def release_and_rebuild(self):
        torch, dist = self.torch, self.dist
        t0 = time.monotonic()
        torch.cuda.synchronize(self.device)
        dist.destroy_process_group()
        try:
            torch.cuda.synchronize(self.device)
            # what the driver checkpoints and criu dumps is what the rank holds: not the allocator's cached blocks
            torch.cuda.empty_cache()
            self._wait_for_the_dump(t0)
        finally:
            # whatever happened above, the ranks agreed on this step: all of them make the group again
            t1 = time.monotonic()
            self.generation += 1
            dist.init_process_group("nccl", store=dist.PrefixStore(f"criu-gpu/{self.generation}", self.store),
                                    rank=self.rank, world_size=self.world, device_id=self.device)
            self.ddp._update_process_group(dist.group.WORLD)
            _say(f"rank {self.rank}: NCCL communicators made again in {time.monotonic() - t1:.2f} s")

    def _wait_for_the_dump(self, t0):
        channel = self.channel
        if channel is None:
            return
        try:
            left = _nccl_threads_gone(10.0)   # the plugin looks for them too: they end soon after the group's shutdown
            token = channel.requested()
            channel.answer(token)
            _say(f"rank {self.rank}: NCCL communicators released for a checkpoint in {time.monotonic() - t0:.2f} s"
                 + (f" ({left} of PyTorch's NCCL threads still running: the dump will be refused)" if left else ""))
            limit = float(os.environ.get("CRIU_GPU_RELEASE_WAIT_S", "900"))
            while channel.requested() != 0:
                # the plugin takes the request back once criu has frozen the job, or at criu's exit
                if time.monotonic() - t0 > limit:
                    _say(f"rank {self.rank}: no dump ended within {limit:.0f} s of the release (criu killed?): going on")
                    channel.withdraw()
                    break
                time.sleep(0.02)
            channel.answer(0)
        except OSError as e:
            _say(f"rank {self.rank}: the criu_gpu channel failed ({e}): going on without it")
            self.channel = None


def checkpointable(ddp, every=10):
    """Registers the release with `ddp` (a DistributedDataParallel on NCCL's default process group); returns `ddp`."""
    if not hasattr(ddp, "_update_process_group"):
        _say("this PyTorch's DistributedDataParallel cannot change its process group: not released for checkpoints")
        return ddp
    release = _Release(ddp, every)
    ddp.register_forward_pre_hook(release.before_forward)
    ddp._criu_gpu_release = release
    return ddp

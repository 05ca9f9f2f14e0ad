#!/usr/bin/env python3
"""One CUDA feature per run, through the driver API (libcuda via ctypes, no toolkit needed), for the feature zoo
(cases_zoo.sh). The program sets the feature up once with a known byte pattern, then every --tick-ms moves the
pattern through the feature's path (copies, peer copies, mapped host memory, a pool...) into a result buffer, reads
it back and compares:

    [z PID] ready feature=NAME gpus=N
    [z PID] tick N ok                 the result equals the pattern (zoo_loop.py)
    [z PID] tick N BAD digest ...     it does not
    [z PID] error <call> <code>       a driver call failed (exit 3)

so a restored process that goes on printing "ok" restores bit-identical. SIGTERM ends it with "exit ticks=N bad=B".

usage: cuda_zoo.py FEATURE [--mib N] [--tick-ms N]

The features that share memory between two processes (ipc-pair, vmm-fd-pair) start this program again as a reader
(`cuda_zoo.py --reader ipc HANDLE` or `--reader fd FD`): its own context opens what the first process exported; each
tick the first process asks it, through a pipe, for the digest of what it reads there, so a reader that lost the
memory makes the tick BAD and one that hangs stops the ticks.
"""
import argparse
import ctypes as C
import hashlib
import mmap
import os
import subprocess
import sys

import zoo_loop

CU_MEMHOSTALLOC_PORTABLE = 0x01
CU_MEMHOSTALLOC_DEVICEMAP = 0x02
CU_MEMHOSTREGISTER_PORTABLE = 0x01
CU_MEMHOSTREGISTER_DEVICEMAP = 0x02
CU_MEM_ATTACH_GLOBAL = 0x1
CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_HANDLE_TYPE_NONE = 0
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1
CU_STREAM_CAPTURE_MODE_GLOBAL = 0
CU_DEV_RESOURCE_TYPE_SM = 1
CU_GREEN_CTX_DEFAULT_STREAM = 0x1

cu = C.CDLL("libcuda.so.1")
say = zoo_loop.say


def check(name, *args):
    rc = getattr(cu, name)(*args)
    if rc != 0:
        say(f"error {name} {rc}")
        sys.exit(3)


class Location(C.Structure):
    _fields_ = [("type", C.c_int), ("id", C.c_int)]


class AllocFlags(C.Structure):
    _fields_ = [("compressionType", C.c_ubyte), ("gpuDirectRDMACapable", C.c_ubyte), ("usage", C.c_ushort),
                ("reserved", C.c_ubyte * 4)]


class AllocationProp(C.Structure):   # CUmemAllocationProp
    _fields_ = [("type", C.c_int), ("requestedHandleTypes", C.c_int), ("location", Location),
                ("win32HandleMetaData", C.c_void_p), ("allocFlags", AllocFlags)]


class AccessDesc(C.Structure):       # CUmemAccessDesc
    _fields_ = [("location", Location), ("flags", C.c_int)]


class PoolProps(C.Structure):        # CUmemPoolProps
    _fields_ = [("allocType", C.c_int), ("handleTypes", C.c_int), ("location", Location),
                ("win32SecurityAttributes", C.c_void_p), ("maxSize", C.c_size_t), ("usage", C.c_ushort),
                ("reserved", C.c_ubyte * 54)]


class Gpu:
    def __init__(self, ordinal):
        self.dev = C.c_int()
        check("cuDeviceGet", C.byref(self.dev), ordinal)
        self.ctx = C.c_void_p()
        check("cuDevicePrimaryCtxRetain", C.byref(self.ctx), self.dev)
        self.ordinal = ordinal

    def current(self):
        check("cuCtxSetCurrent", self.ctx)
        return self

    def alloc(self, size):
        self.current()
        p = C.c_uint64()
        check("cuMemAlloc_v2", C.byref(p), C.c_size_t(size))
        return p.value


def gpus(n):
    count = C.c_int()
    check("cuDeviceGetCount", C.byref(count))
    if count.value < n:
        say(f"error needs {n} GPUs, sees {count.value}")
        sys.exit(2)
    return [Gpu(i) for i in range(n)]


def h2d(dst, host, size):
    check("cuMemcpyHtoD_v2", C.c_uint64(dst), host, C.c_size_t(size))


def d2h(host, src, size):
    check("cuMemcpyDtoH_v2", host, C.c_uint64(src), C.c_size_t(size))


def d2d(dst, src, size):   # unified addressing: any two device (or mapped host) pointers, same or other GPU
    check("cuMemcpyDtoD_v2", C.c_uint64(dst), C.c_uint64(src), C.c_size_t(size))
    check("cuCtxSynchronize")


def vmm_alloc(gpu, size, handle_type, access_gpus):
    gpu.current()
    prop = AllocationProp(type=CU_MEM_ALLOCATION_TYPE_PINNED, requestedHandleTypes=handle_type,
                          location=Location(CU_MEM_LOCATION_TYPE_DEVICE, gpu.dev.value))
    gran = C.c_size_t()
    check("cuMemGetAllocationGranularity", C.byref(gran), C.byref(prop), 0)
    size = (size + gran.value - 1) // gran.value * gran.value
    handle = C.c_uint64()
    check("cuMemCreate", C.byref(handle), C.c_size_t(size), C.byref(prop), C.c_uint64(0))
    ptr = C.c_uint64()
    check("cuMemAddressReserve", C.byref(ptr), C.c_size_t(size), C.c_size_t(0), C.c_uint64(0), C.c_uint64(0))
    check("cuMemMap", ptr, C.c_size_t(size), C.c_size_t(0), handle, C.c_uint64(0))
    descs = (AccessDesc * len(access_gpus))(*[AccessDesc(Location(CU_MEM_LOCATION_TYPE_DEVICE, g.dev.value),
                                                         CU_MEM_ACCESS_FLAGS_PROT_READWRITE) for g in access_gpus])
    check("cuMemSetAccess", ptr, C.c_size_t(size), descs, C.c_size_t(len(access_gpus)))
    return ptr.value, handle


class Feature:
    """setup() puts the pattern somewhere; step() moves it into self.result (device memory of GPU 0) and returns
    the bytes read back."""
    ngpus = 1

    def __init__(self, size, pattern):
        self.size, self.pattern = size, pattern
        self.g = gpus(self.ngpus)
        self.host = C.create_string_buffer(pattern, size)
        self.back = C.create_string_buffer(size)
        self.result = self.g[0].alloc(size)
        self.setup()

    def setup(self):
        self.src = self.g[0].alloc(self.size)
        h2d(self.src, self.host, self.size)

    def move(self):
        d2d(self.result, self.src, self.size)

    def step(self):
        self.g[0].current()
        check("cuMemsetD8_v2", C.c_uint64(self.result), C.c_ubyte(0), C.c_size_t(self.size))
        self.move()
        self.g[0].current()
        d2h(self.back, self.result, self.size)
        return self.back.raw

    def tick(self):
        return digest(self.step())


class Idle(Feature):
    """a context with memory, doing nothing between checks"""


class TwoGpus(Feature):
    """contexts on two GPUs, no peer access: the pattern goes GPU 1 -> host -> GPU 0"""
    ngpus = 2

    def setup(self):
        self.src = self.g[1].alloc(self.size)
        h2d(self.src, self.host, self.size)
        self.stage = C.create_string_buffer(self.size)

    def move(self):
        self.g[1].current()
        d2h(self.stage, self.src, self.size)
        self.g[0].current()
        h2d(self.result, self.stage, self.size)


class Peer(TwoGpus):
    """peer access enabled both ways (as XLA does at start), then direct GPU 1 -> GPU 0 copies"""

    def setup(self):
        self.g[0].current()
        check("cuCtxEnablePeerAccess", self.g[1].ctx, 0)
        self.g[1].current()
        check("cuCtxEnablePeerAccess", self.g[0].ctx, 0)
        self.src = self.g[1].alloc(self.size)
        h2d(self.src, self.host, self.size)

    def move(self):
        self.g[0].current()
        d2d(self.result, self.src, self.size)


class PeerIdle(Peer):
    """peer access enabled both ways, but every copy staged through the host"""

    def move(self):
        TwoGpus.move(self)

    def setup(self):
        Peer.setup(self)
        self.stage = C.create_string_buffer(self.size)


COPY_PTX = b"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry copy_words(.param .u64 dst, .param .u64 src, .param .u64 n)
{
    .reg .pred %p;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [dst];
    ld.param.u64 %rd2, [src];
    ld.param.u64 %rd3, [n];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.u32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd4, %r4;
    setp.ge.u64 %p, %rd4, %rd3;
    @%p ret;
    shl.b64 %rd5, %rd4, 2;
    add.u64 %rd6, %rd2, %rd5;
    add.u64 %rd7, %rd1, %rd5;
    ld.global.u32 %r5, [%rd6];
    st.global.u32 [%rd7], %r5;
    ret;
}
"""


class CopyKernel:
    """A kernel of our own (PTX the driver compiles at load: no toolkit needed) that copies 32-bit words; it reads
    memory of another GPU where peer access allows it."""

    def __init__(self, gpu):
        gpu.current()
        self.module = C.c_void_p()
        check("cuModuleLoadData", C.byref(self.module), C.c_char_p(COPY_PTX + b"\0"))
        self.function = C.c_void_p()
        check("cuModuleGetFunction", C.byref(self.function), self.module, b"copy_words")

    def run(self, dst, src, size):
        words = size // 4
        args = [C.c_uint64(dst), C.c_uint64(src), C.c_uint64(words)]
        params = (C.c_void_p * 3)(*[C.cast(C.pointer(a), C.c_void_p) for a in args])
        check("cuLaunchKernel", self.function, C.c_uint((words + 255) // 256), C.c_uint(1), C.c_uint(1),
              C.c_uint(256), C.c_uint(1), C.c_uint(1), C.c_uint(0), C.c_void_p(0), params, C.c_void_p(0))
        check("cuCtxSynchronize")


class Kernel(Feature):
    """the pattern copied by a kernel of our own, on one GPU"""

    def setup(self):
        Feature.setup(self)
        self.kernel = CopyKernel(self.g[0])

    def move(self):
        self.g[0].current()
        self.kernel.run(self.result, self.src, self.size)


class PeerAfterAlloc(Feature):
    """cuda_multi's order: memory on both GPUs first, then peer access enabled both ways, then direct copies"""
    ngpus = 2
    kernel = False

    def setup(self):
        self.src = self.g[1].alloc(self.size)
        h2d(self.src, self.host, self.size)
        self.g[0].current()
        check("cuCtxEnablePeerAccess", self.g[1].ctx, 0)
        self.g[1].current()
        check("cuCtxEnablePeerAccess", self.g[0].ctx, 0)
        self.copier = CopyKernel(self.g[0]) if self.kernel else None

    def move(self):
        self.g[0].current()
        if self.copier:
            self.copier.run(self.result, self.src, self.size)   # GPU 0's kernel reads GPU 1's memory
        else:
            d2d(self.result, self.src, self.size)


class PeerAfterAllocKernel(PeerAfterAlloc):
    """the same, GPU 0's own kernel reading GPU 1's memory through the peer mapping"""
    kernel = True


class Vmm(Feature):
    """cuMemCreate + cuMemMap, access for GPU 0"""

    def setup(self):
        self.src, _ = vmm_alloc(self.g[0], self.size, CU_MEM_HANDLE_TYPE_NONE, self.g)
        h2d(self.src, self.host, self.size)


class VmmFd(Vmm):
    """cuMemCreate with a POSIX fd handle type (exportable), never exported"""

    def setup(self):
        self.src, _ = vmm_alloc(self.g[0], self.size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, self.g)
        h2d(self.src, self.host, self.size)


class VmmPeer(Feature):
    """memory of GPU 1 made accessible to GPU 0 with cuMemSetAccess (no cuCtxEnablePeerAccess), read by GPU 0"""
    ngpus = 2

    def setup(self):
        self.src, _ = vmm_alloc(self.g[1], self.size, CU_MEM_HANDLE_TYPE_NONE, self.g)
        h2d(self.src, self.host, self.size)

    def move(self):
        self.g[0].current()
        d2d(self.result, self.src, self.size)


class Pinned(Feature):
    """page-locked host memory from cuMemHostAlloc, mapped into the device, copied from by the GPU"""
    flags = CU_MEMHOSTALLOC_DEVICEMAP

    def setup(self):
        self.g[0].current()
        p = C.c_void_p()
        check("cuMemHostAlloc", C.byref(p), C.c_size_t(self.size), C.c_uint(self.flags))
        C.memmove(p, self.host, self.size)
        self.src = self.device_pointer(p)

    def device_pointer(self, p):
        d = C.c_uint64()
        check("cuMemHostGetDevicePointer_v2", C.byref(d), p, C.c_uint(0))
        return d.value


class PinnedPortable(Pinned):
    """portable pinned memory with contexts on two GPUs; GPU 1 copies it into its memory, GPU 0 reads that"""
    ngpus = 2
    flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP

    def setup(self):
        Pinned.setup(self)
        self.mid = self.g[1].alloc(self.size)
        self.stage = C.create_string_buffer(self.size)

    def move(self):
        self.g[1].current()
        d2d(self.mid, self.src, self.size)
        d2h(self.stage, self.mid, self.size)
        self.g[0].current()
        h2d(self.result, self.stage, self.size)


class HostRegistered(Feature):
    """anonymous private memory registered with cuMemHostRegister, read through its device pointer"""
    shared = False

    def setup(self):
        flags = mmap.MAP_SHARED if self.shared else mmap.MAP_PRIVATE
        self.map = mmap.mmap(-1, self.size, flags=flags | mmap.MAP_ANONYMOUS)
        self.map.write(self.pattern)
        addr = C.addressof(C.c_char.from_buffer(self.map))
        self.g[0].current()
        check("cuMemHostRegister_v2", C.c_void_p(addr), C.c_size_t(self.size),
              C.c_uint(CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE))
        d = C.c_uint64()
        check("cuMemHostGetDevicePointer_v2", C.byref(d), C.c_void_p(addr), C.c_uint(0))
        self.src = d.value


class HostRegisteredShared(HostRegistered):
    """the same on MAP_SHARED anonymous memory"""
    shared = True


class Managed(Feature):
    """cuMemAllocManaged"""

    def setup(self):
        self.g[0].current()
        p = C.c_uint64()
        check("cuMemAllocManaged", C.byref(p), C.c_size_t(self.size), C.c_uint(CU_MEM_ATTACH_GLOBAL))
        h2d(p.value, self.host, self.size)
        self.src = p.value


class AsyncPool(Feature):
    """stream-ordered allocation from the device's default pool (cudaMallocAsync), freed and made again each tick"""
    handle_types = None

    def setup(self):
        self.g[0].current()
        self.stream = C.c_void_p()
        check("cuStreamCreate", C.byref(self.stream), C.c_uint(0))
        self.pool = None
        if self.handle_types is not None:
            props = PoolProps(allocType=CU_MEM_ALLOCATION_TYPE_PINNED, handleTypes=self.handle_types,
                              location=Location(CU_MEM_LOCATION_TYPE_DEVICE, self.g[0].dev.value))
            self.pool = C.c_void_p()
            check("cuMemPoolCreate", C.byref(self.pool), C.byref(props))
        self.src = self.pool_alloc()
        h2d(self.src, self.host, self.size)

    def pool_alloc(self):
        p = C.c_uint64()
        if self.pool is None:
            check("cuMemAllocAsync", C.byref(p), C.c_size_t(self.size), self.stream)
        else:
            check("cuMemAllocFromPoolAsync", C.byref(p), C.c_size_t(self.size), self.pool, self.stream)
        check("cuStreamSynchronize", self.stream)
        return p.value

    def move(self):
        tmp = self.pool_alloc()
        d2d(tmp, self.src, self.size)
        d2d(self.result, tmp, self.size)
        check("cuMemFreeAsync", C.c_uint64(tmp), self.stream)
        check("cuStreamSynchronize", self.stream)


class AsyncPoolIpc(AsyncPool):
    """the same from a pool created with a POSIX fd handle type (shareable, never shared)"""
    handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR


class IpcHandle(C.Structure):      # CUipcMemHandle, passed by value to cuIpcOpenMemHandle
    _fields_ = [("reserved", C.c_char * 64)]


class Reader:
    """The second process of a pair: what it reads through the shared memory, digested on request."""

    def __init__(self, argv, pass_fds=()):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)] + argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, pass_fds=pass_fds, text=True)
        line = self.proc.stdout.readline().strip()
        if line != "reader ready":
            say(f"error reader {line or 'ended before it was ready'}")
            sys.exit(3)

    def digest(self):
        self.proc.stdin.write("tick\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().strip()
        if not line:
            say("error reader ended")
            sys.exit(3)
        return line


class IpcPair(Feature):
    """legacy CUDA IPC: a second process (its own context) opens this one's memory (cuIpcOpenMemHandle) and reads it"""

    def setup(self):
        Feature.setup(self)
        handle = IpcHandle()
        check("cuIpcGetMemHandle", C.byref(handle), C.c_uint64(self.src))
        self.reader = Reader(["--reader", "ipc", C.string_at(C.byref(handle), 64).hex(), "--size", str(self.size)])

    def tick(self):
        return self.reader.digest()


class VmmFdPair(Feature):
    """cuMem memory exported as a POSIX fd, inherited by a second process that imports and maps it (NCCL's cuMem path
    shares such fds between ranks)"""

    def setup(self):
        self.src, handle = vmm_alloc(self.g[0], self.size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, self.g)
        h2d(self.src, self.host, self.size)
        fd = C.c_int(-1)
        check("cuMemExportToShareableHandle", C.byref(fd), handle, C.c_int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
              C.c_uint64(0))
        self.reader = Reader(["--reader", "fd", str(fd.value), "--size", str(self.size)], pass_fds=(fd.value,))
        os.close(fd.value)

    def tick(self):
        return self.reader.digest()


def reader_main(kind, ref, size):
    """The reader of a pair: opens the exported memory in a context of its own, then digests it on every request."""
    check("cuInit", 0)
    gpu = gpus(1)[0].current()
    if kind == "ipc":
        cu.cuIpcOpenMemHandle_v2.argtypes = [C.POINTER(C.c_uint64), IpcHandle, C.c_uint]
        handle = IpcHandle()
        C.memmove(C.byref(handle), bytes.fromhex(ref), 64)
        p = C.c_uint64()
        check("cuIpcOpenMemHandle_v2", C.byref(p), handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        src = p.value
    else:
        alloc = C.c_uint64()
        check("cuMemImportFromShareableHandle", C.byref(alloc), C.c_void_p(int(ref)),
              C.c_int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        os.close(int(ref))
        ptr = C.c_uint64()
        check("cuMemAddressReserve", C.byref(ptr), C.c_size_t(size), C.c_size_t(0), C.c_uint64(0), C.c_uint64(0))
        check("cuMemMap", ptr, C.c_size_t(size), C.c_size_t(0), alloc, C.c_uint64(0))
        desc = AccessDesc(Location(CU_MEM_LOCATION_TYPE_DEVICE, gpu.dev.value), CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        check("cuMemSetAccess", ptr, C.c_size_t(size), C.byref(desc), C.c_size_t(1))
        src = ptr.value
    result, back = gpu.alloc(size), C.create_string_buffer(size)
    print("reader ready", flush=True)
    for _ in sys.stdin:
        check("cuMemsetD8_v2", C.c_uint64(result), C.c_ubyte(0), C.c_size_t(size))
        d2d(result, src, size)
        d2h(back, result, size)
        print(digest(back.raw), flush=True)


class GraphMemNodes(Feature):
    """a CUDA graph captured from a stream with memory nodes (cuMemAllocAsync/cuMemFreeAsync inside the capture): each
    launch allocates from the graph's own pool, copies the pattern through it and frees it"""

    def setup(self):
        Feature.setup(self)
        self.g[0].current()
        self.stream = C.c_void_p()
        check("cuStreamCreate", C.byref(self.stream), C.c_uint(0))
        check("cuStreamBeginCapture_v2", self.stream, C.c_int(CU_STREAM_CAPTURE_MODE_GLOBAL))
        tmp = C.c_uint64()
        check("cuMemAllocAsync", C.byref(tmp), C.c_size_t(self.size), self.stream)
        check("cuMemcpyDtoDAsync_v2", tmp, C.c_uint64(self.src), C.c_size_t(self.size), self.stream)
        check("cuMemcpyDtoDAsync_v2", C.c_uint64(self.result), tmp, C.c_size_t(self.size), self.stream)
        check("cuMemFreeAsync", tmp, self.stream)
        graph = C.c_void_p()
        check("cuStreamEndCapture", self.stream, C.byref(graph))
        self.exec = C.c_void_p()
        check("cuGraphInstantiateWithFlags", C.byref(self.exec), graph, C.c_uint64(0))

    def move(self):
        check("cuGraphLaunch", self.exec, self.stream)
        check("cuStreamSynchronize", self.stream)


class GreenContext(Feature):
    """a green context (CUDA 12.4+): half of GPU 0's SMs split off, memory and a kernel of our own run in it"""

    def setup(self):
        dev = self.g[0].dev
        whole, part, rest = (C.create_string_buffer(256) for _ in range(3))   # CUdevResource (144 bytes), with room
        check("cuDeviceGetDevResource", dev, whole, C.c_int(CU_DEV_RESOURCE_TYPE_SM))
        sms = C.c_uint.from_buffer(whole, 96).value   # after the type and 92 bytes of padding: sm.smCount
        groups = C.c_uint(1)
        check("cuDevSmResourceSplitByCount", part, C.byref(groups), whole, rest, C.c_uint(0), C.c_uint(max(8, sms // 2 // 8 * 8)))
        desc = C.c_void_p()
        check("cuDevResourceGenerateDesc", C.byref(desc), part, C.c_uint(1))
        self.green = C.c_void_p()
        check("cuGreenCtxCreate", C.byref(self.green), desc, dev, C.c_uint(CU_GREEN_CTX_DEFAULT_STREAM))
        ctx = C.c_void_p()
        check("cuCtxFromGreenCtx", C.byref(ctx), self.green)
        self.g[0].ctx = ctx          # every later call of this feature runs in the green context
        say(f"green context with {C.c_uint.from_buffer(part, 96).value} of {sms} SMs")
        self.result = self.g[0].alloc(self.size)
        Feature.setup(self)
        self.kernel = CopyKernel(self.g[0])

    def move(self):
        self.g[0].current()
        self.kernel.run(self.result, self.src, self.size)


FEATURES = {
    "idle": Idle, "two-gpus": TwoGpus, "peer": Peer, "peer-enabled-unused": PeerIdle, "vmm": Vmm, "vmm-fd": VmmFd,
    "vmm-peer-access": VmmPeer, "pinned": Pinned, "pinned-portable-2gpu": PinnedPortable,
    "host-registered": HostRegistered, "host-registered-shared": HostRegisteredShared, "managed": Managed,
    "async-pool": AsyncPool, "async-pool-fd": AsyncPoolIpc, "kernel": Kernel, "peer-after-alloc": PeerAfterAlloc,
    "peer-after-alloc-kernel": PeerAfterAllocKernel, "ipc-pair": IpcPair, "vmm-fd-pair": VmmFdPair,
    "graph-mem-nodes": GraphMemNodes, "green-context": GreenContext,
}


def main():
    if sys.argv[1:2] == ["--reader"]:
        rp = argparse.ArgumentParser()
        rp.add_argument("--reader", nargs=2, metavar=("KIND", "REF"))
        rp.add_argument("--size", type=int, required=True)
        r = rp.parse_args()
        return reader_main(r.reader[0], r.reader[1], r.size)
    ap = argparse.ArgumentParser()
    ap.add_argument("feature", choices=sorted(FEATURES))
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--tick-ms", type=int, default=50)
    args = ap.parse_args()
    check("cuInit", 0)
    size = args.mib << 20
    seed = hashlib.sha256(args.feature.encode()).digest()
    pattern = (seed * (size // len(seed) + 1))[:size]
    feature = FEATURES[args.feature](size, pattern)
    zoo_loop.run(f"feature={args.feature} gpus={feature.ngpus}", feature.tick, args.tick_ms, expected=digest(pattern))


def digest(data):
    return hashlib.sha256(data).hexdigest()[:16]


if __name__ == "__main__":
    main()

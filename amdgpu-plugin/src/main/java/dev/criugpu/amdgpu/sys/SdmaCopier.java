package dev.criugpu.amdgpu.sys;

import dev.criugpu.amdgpu.bindings.amdgpu_bo_alloc_request;
import dev.criugpu.amdgpu.bindings.amdgpu_bo_import_result;
import dev.criugpu.amdgpu.bindings.amdgpu_cs_fence;
import dev.criugpu.amdgpu.bindings.amdgpu_cs_ib_info;
import dev.criugpu.amdgpu.bindings.amdgpu_cs_request;
import dev.criugpu.amdgpu.bindings.amdgpu_gpu_info;
import dev.criugpu.amdgpu.bindings.amdgpu_h;
import dev.criugpu.amdgpu.images.PagesFileReader;
import dev.criugpu.amdgpu.images.PagesFileWriter;
import dev.criugpu.api.CriuException;
import dev.criugpu.api.Errno;
import dev.criugpu.api.sys.Syscalls;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.function.Consumer;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Moves VRAM/GTT BO contents through one GPU's SDMA engine, the way upstream does: import the BO's dma-buf, wrap a
 * page-aligned host bounce buffer as a userptr BO, map both (and a GTT IB) into the GPU's VA space, then per
 * buffer-full submit linear-copy packets on DMA ring 0 in a fresh context and wait for the fence. Dump
 * ({@link #read}) appends each buffer-full to a pages file after the copy; restore ({@link #write}) fills the
 * buffer from the pages file before it. The bounce buffer is allocated once per copier and bounds host memory
 * ({@code KFD_MAX_BUFFER_SIZE}). One copier belongs to one thread.
 */
public final class SdmaCopier implements AutoCloseable {
    public static final long PAGE = 4096;

    private final AmdgpuDevice dev;
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment host;
    private final SdmaLinearCopy.CountEncoding encoding;

    /** {@code bufferBytes} is rounded down to whole pages (at least one). */
    private SdmaCopier(AmdgpuDevice dev, long bufferBytes, SdmaLinearCopy.CountEncoding encoding) {
        this.dev = dev;
        this.encoding = encoding;
        long pages = Math.max(PAGE, bufferBytes & -PAGE);
        this.host = arena.allocate(pages, PAGE);
    }

    public long bufferBytes() {
        return host.byteSize();
    }

    /**
     * Opens render node {@code renderMinor} in this process, a libdrm device and a copier with a bounce buffer of
     * {@code bufferBytes} on it, runs {@code work}, and tears all of it down again on every path.
     */
    public static void onRenderNode(Syscalls sys, int renderMinor, long bufferBytes, Consumer<SdmaCopier> work) {
        int fd = sys.open("/dev/dri/renderD" + renderMinor, Syscalls.O_RDWR | Syscalls.O_CLOEXEC);
        try (AmdgpuDevice dev = AmdgpuDevice.open(fd);
             SdmaCopier copier = new SdmaCopier(dev, bufferBytes, SdmaLinearCopy.CountEncoding.BYTES)) {
            work.accept(copier);
        } finally {
            sys.close(fd);
        }
    }

    /** Appends the {@code size} bytes of the BO behind {@code dmabufFd} to {@code out}. */
    public void read(int dmabufFd, long size, PagesFileWriter out) {
        transfer(dmabufFd, size, false, (done, chunk) -> out.write(chunk.asByteBuffer()));
    }

    /** Fills the {@code size} bytes of the BO behind {@code dmabufFd} from {@code in}, starting at payload {@code offset}. */
    public void write(int dmabufFd, long size, PagesFileReader in, long offset) {
        transfer(dmabufFd, size, true, (done, chunk) -> in.readFully(offset + done, chunk.asByteBuffer()));
    }

    /** What happens to the host buffer around each copy: BO bytes {@code done..done+chunk.byteSize()}. */
    private interface HostSide {
        void accept(long done, MemorySegment chunk);
    }

    private void transfer(int dmabufFd, long size, boolean toBo, HostSide hostSide) {
        Deque<Runnable> undo = new ArrayDeque<>();
        RuntimeException failure = null;
        Arena a = Arena.ofConfined();
        try {
            MemorySegment imported = amdgpu_bo_import_result.allocate(a);
            DrmResult.check(amdgpu_h.amdgpu_bo_import(dev.handle(), amdgpu_h.amdgpu_bo_handle_type_dma_buf_fd(), dmabufFd,
                    imported), "amdgpu_bo_import of dma-buf fd " + dmabufFd);
            MemorySegment bo = amdgpu_bo_import_result.buf_handle(imported);
            undo.push(() -> DrmResult.check(amdgpu_h.amdgpu_bo_free(bo), "amdgpu_bo_free"));
            if (amdgpu_bo_import_result.alloc_size(imported) < size) {
                throw new CriuException(Errno.EINVAL, "the dma-buf holds " + amdgpu_bo_import_result.alloc_size(imported)
                        + " bytes, less than the BO's " + size);
            }
            long window = Math.min(roundUp(size), host.byteSize());
            MemorySegment userptr = handle(a, h -> amdgpu_h.amdgpu_create_bo_from_user_mem(dev.handle(), host, window, h),
                    "amdgpu_create_bo_from_user_mem");
            undo.push(() -> DrmResult.check(amdgpu_h.amdgpu_bo_free(userptr), "amdgpu_bo_free"));

            long boVa = map(a, bo, size, undo);
            long hostVa = map(a, userptr, window, undo);

            long ibBytes = roundUp(align(SdmaLinearCopy.ibBytes(size, window, dev.familyId()), 32));
            MemorySegment req = amdgpu_bo_alloc_request.allocate(a);
            req.fill((byte) 0);
            amdgpu_bo_alloc_request.alloc_size(req, ibBytes);
            amdgpu_bo_alloc_request.phys_alignment(req, PAGE);
            amdgpu_bo_alloc_request.preferred_heap(req, amdgpu_h.AMDGPU_GEM_DOMAIN_GTT());
            MemorySegment ib = handle(a, h -> amdgpu_h.amdgpu_bo_alloc(dev.handle(), req, h), "amdgpu_bo_alloc of the IB");
            undo.push(() -> DrmResult.check(amdgpu_h.amdgpu_bo_free(ib), "amdgpu_bo_free"));
            long ibVa = map(a, ib, ibBytes, undo);
            MemorySegment cpu = a.allocate(ADDRESS);
            DrmResult.check(amdgpu_h.amdgpu_bo_cpu_map(ib, cpu), "amdgpu_bo_cpu_map of the IB");
            undo.push(() -> DrmResult.check(amdgpu_h.amdgpu_bo_cpu_unmap(ib), "amdgpu_bo_cpu_unmap"));
            MemorySegment ibCpu = cpu.get(ADDRESS, 0).reinterpret(ibBytes);

            MemorySegment resources = a.allocate(ADDRESS, 3);
            resources.setAtIndex(ADDRESS, 0, bo);
            resources.setAtIndex(ADDRESS, 1, userptr);
            resources.setAtIndex(ADDRESS, 2, ib);
            MemorySegment list = handle(a, h -> amdgpu_h.amdgpu_bo_list_create(dev.handle(), 3, resources,
                    MemorySegment.NULL, h), "amdgpu_bo_list_create");
            undo.push(() -> DrmResult.check(amdgpu_h.amdgpu_bo_list_destroy(list), "amdgpu_bo_list_destroy"));

            for (long done = 0; done < size; ) {
                long n = Math.min(size - done, window);
                MemorySegment chunk = host.asSlice(0, n);
                if (toBo) hostSide.accept(done, chunk);
                int[] packets = toBo
                        ? SdmaLinearCopy.packets(hostVa, boVa + done, n, dev.familyId(), encoding)
                        : SdmaLinearCopy.packets(boVa + done, hostVa, n, dev.familyId(), encoding);
                MemorySegment.copy(packets, 0, ibCpu, JAVA_INT, 0, packets.length);
                submitAndWait(list, ibVa, packets.length, done, n);
                if (!toBo) hostSide.accept(done, chunk);
                done += n;
            }
        } catch (RuntimeException e) {
            failure = e;
        }
        // Tear down in reverse order even after a failure; a tear-down error fails an otherwise good copy.
        while (!undo.isEmpty()) {
            try {
                undo.pop().run();
            } catch (RuntimeException e) {
                if (failure == null) failure = e;
                else failure.addSuppressed(e);
            }
        }
        a.close();
        if (failure != null) throw failure;
    }

    private void submitAndWait(MemorySegment list, long ibVa, int dwords, long offset, long length) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ctxOut = a.allocate(ADDRESS);
            DrmResult.check(amdgpu_h.amdgpu_cs_ctx_create(dev.handle(), ctxOut), "amdgpu_cs_ctx_create");
            MemorySegment ctx = ctxOut.get(ADDRESS, 0);
            try {
                MemorySegment ibInfo = amdgpu_cs_ib_info.allocate(a);
                ibInfo.fill((byte) 0);
                amdgpu_cs_ib_info.ib_mc_address(ibInfo, ibVa);
                amdgpu_cs_ib_info.size(ibInfo, dwords);
                MemorySegment req = amdgpu_cs_request.allocate(a);
                req.fill((byte) 0);
                amdgpu_cs_request.ip_type(req, amdgpu_h.AMDGPU_HW_IP_DMA());
                amdgpu_cs_request.ring(req, 0);
                amdgpu_cs_request.resources(req, list);
                amdgpu_cs_request.number_of_ibs(req, 1);
                amdgpu_cs_request.ibs(req, ibInfo);
                String at = " (bytes " + offset + ".." + (offset + length) + ")";
                DrmResult.check(amdgpu_h.amdgpu_cs_submit(ctx, 0, req, 1), "SDMA submit" + at);
                MemorySegment fence = amdgpu_cs_fence.allocate(a);
                fence.fill((byte) 0);
                amdgpu_cs_fence.context(fence, ctx);
                amdgpu_cs_fence.ip_type(fence, amdgpu_h.AMDGPU_HW_IP_DMA());
                amdgpu_cs_fence.ring(fence, 0);
                amdgpu_cs_fence.fence(fence, amdgpu_cs_request.seq_no(req));
                MemorySegment expired = a.allocate(JAVA_INT);
                DrmResult.check(amdgpu_h.amdgpu_cs_query_fence_status(fence, amdgpu_h.AMDGPU_TIMEOUT_INFINITE(), 0,
                        expired), "SDMA fence wait" + at);
                if (expired.get(JAVA_INT, 0) == 0) {
                    throw new CriuException(Errno.ETIMEDOUT, "SDMA fence did not signal" + at);
                }
            } finally {
                DrmResult.check(amdgpu_h.amdgpu_cs_ctx_free(ctx), "amdgpu_cs_ctx_free");
            }
        }
    }

    /** Allocates a GPU VA range for {@code size} bytes and maps {@code bo} there; undo unmaps and frees it. */
    private long map(Arena a, MemorySegment bo, long size, Deque<Runnable> undo) {
        MemorySegment va = a.allocate(JAVA_LONG);
        MemorySegment range = handle(a, h -> amdgpu_h.amdgpu_va_range_alloc(dev.handle(),
                amdgpu_h.amdgpu_gpu_va_range_general(), size, PAGE, 0, va, h, 0), "amdgpu_va_range_alloc");
        undo.push(() -> DrmResult.check(amdgpu_h.amdgpu_va_range_free(range), "amdgpu_va_range_free"));
        long addr = va.get(JAVA_LONG, 0);
        DrmResult.check(amdgpu_h.amdgpu_bo_va_op(bo, 0, size, addr, 0, amdgpu_h.AMDGPU_VA_OP_MAP()), "amdgpu_bo_va_op MAP");
        undo.push(() -> DrmResult.check(amdgpu_h.amdgpu_bo_va_op(bo, 0, size, addr, 0, amdgpu_h.AMDGPU_VA_OP_UNMAP()),
                "amdgpu_bo_va_op UNMAP"));
        return addr;
    }

    private interface HandleCall {
        int call(MemorySegment out);
    }

    private static MemorySegment handle(Arena a, HandleCall call, String what) {
        MemorySegment out = a.allocate(ADDRESS);
        DrmResult.check(call.call(out), what);
        return out.get(ADDRESS, 0);
    }

    private static long roundUp(long n) {
        return align(n, PAGE);
    }

    private static long align(long n, long to) {
        return (n + to - 1) & -to;
    }

    @Override
    public void close() {
        arena.close();
    }

    /** A libdrm_amdgpu device handle on a render-node fd the caller keeps open, with the GPU family it reports. */
    private static final class AmdgpuDevice implements AutoCloseable {
        private final MemorySegment handle;
        private final int familyId;

        private AmdgpuDevice(MemorySegment handle, int familyId) {
            this.handle = handle;
            this.familyId = familyId;
        }

        /** amdgpu_device_initialize + amdgpu_query_gpu_info on {@code renderFd}. */
        public static AmdgpuDevice open(int renderFd) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment major = a.allocate(JAVA_INT);
                MemorySegment minor = a.allocate(JAVA_INT);
                MemorySegment dev = a.allocate(ADDRESS);
                DrmResult.check(amdgpu_h.amdgpu_device_initialize(renderFd, major, minor, dev), "amdgpu_device_initialize");
                MemorySegment handle = dev.get(ADDRESS, 0);
                MemorySegment info = amdgpu_gpu_info.allocate(a);
                info.fill((byte) 0);
                int rc = amdgpu_h.amdgpu_query_gpu_info(handle, info);
                if (rc != 0) {
                    amdgpu_h.amdgpu_device_deinitialize(handle);
                    DrmResult.check(rc, "amdgpu_query_gpu_info");
                }
                return new AmdgpuDevice(handle, amdgpu_gpu_info.family_id(info));
            }
        }

        public MemorySegment handle() {
            return handle;
        }

        public int familyId() {
            return familyId;
        }

        @Override
        public void close() {
            DrmResult.check(amdgpu_h.amdgpu_device_deinitialize(handle), "amdgpu_device_deinitialize");
        }
    }
}

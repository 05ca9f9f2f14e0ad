package dev.criugpu.amdgpu.bindings;

import dev.criugpu.api.bindings.NativeLibrary;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The libdrm_amdgpu functions and constants the SDMA copy uses ({@code libdrm/amdgpu.h},
 * {@code libdrm/amdgpu_drm.h}), in the shape jextract generates: one static method per C function, each backed
 * by a downcall handle that is created on first use. The library is looked up only then, so loading this class
 * on a host without libdrm_amdgpu is harmless; {@link #available()} says whether the calls can work.
 *
 * <p>Tests switch the library the way {@code Syscalls} switches libc: the system properties
 * {@value #LIBRARY_PROPERTY} (a shared object path) and {@value #PREFIX_PROPERTY} (prepended to every symbol
 * name) bind the same signatures from the simulated KFD ({@code libkfdsim.so}, {@code kfdsim_amdgpu_*}). They
 * are read once, when the first call needs the library.
 */
public final class amdgpu_h {
    private amdgpu_h() {
    }

    /** Shared object name of libdrm_amdgpu (Debian/Ubuntu: libdrm-amdgpu1). */
    public static final String LIBRARY = "libdrm_amdgpu.so.1";

    /** Every function this class binds, for checks that the installed library has them all. */
    public static final List<String> FUNCTIONS = List.of("amdgpu_device_initialize", "amdgpu_device_deinitialize", "amdgpu_query_gpu_info", "amdgpu_bo_import", "amdgpu_create_bo_from_user_mem", "amdgpu_bo_alloc", "amdgpu_bo_free", "amdgpu_va_range_alloc", "amdgpu_va_range_free", "amdgpu_bo_va_op", "amdgpu_bo_cpu_map", "amdgpu_bo_cpu_unmap", "amdgpu_bo_list_create", "amdgpu_bo_list_destroy", "amdgpu_cs_ctx_create", "amdgpu_cs_ctx_free", "amdgpu_cs_submit", "amdgpu_cs_query_fence_status");

    public static long AMDGPU_TIMEOUT_INFINITE() { return 0xffffffffffffffffL; }
    public static int amdgpu_gpu_va_range_general() { return 0; }
    public static int amdgpu_bo_handle_type_dma_buf_fd() { return 2; }
    public static int AMDGPU_VA_OP_MAP() { return 1; }
    public static int AMDGPU_VA_OP_UNMAP() { return 2; }
    public static int AMDGPU_HW_IP_DMA() { return 2; }
    public static int AMDGPU_GEM_DOMAIN_GTT() { return 2; }
    public static int AMDGPU_FAMILY_AI() { return 141; }

    public static final String LIBRARY_PROPERTY = "amdgpu.libdrm.library";
    public static final String PREFIX_PROPERTY = "amdgpu.libdrm.prefix";

    /** The library the calls are bound to: {@link #LIBRARY}, or the test override. */
    public static String origin() {
        return Lib.DRM.name();
    }

    /** True when libdrm_amdgpu can be loaded on this host. */
    public static boolean available() {
        return Lib.DRM.available();
    }

    /** The address of {@code name} in libdrm_amdgpu, if the library and the symbol exist. */
    public static Optional<MemorySegment> find(String name) {
        return Lib.DRM.find(name);
    }

    private static final class Lib {
        static final NativeLibrary DRM = NativeLibrary.open(System.getProperty(LIBRARY_PROPERTY, LIBRARY),
                System.getProperty(PREFIX_PROPERTY, ""), "not installed", null);

        static MethodHandle downcall(String name, FunctionDescriptor descriptor) {
            return DRM.downcall(name, descriptor);
        }

        static RuntimeException rethrow(String name, Throwable t) {
            if (t instanceof RuntimeException r) return r;
            if (t instanceof Error e) throw e;
            return new IllegalStateException(name + " failed", t);
        }
    }

    private static final class amdgpu_device_initialize$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_device_initialize", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    }

    public static int amdgpu_device_initialize(int fd, MemorySegment major_version, MemorySegment minor_version, MemorySegment device_handle) {
        try {
            return (int) amdgpu_device_initialize$.HANDLE.invokeExact(fd, major_version, minor_version, device_handle);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_device_initialize", t);
        }
    }

    private static final class amdgpu_device_deinitialize$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_device_deinitialize", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    public static int amdgpu_device_deinitialize(MemorySegment device_handle) {
        try {
            return (int) amdgpu_device_deinitialize$.HANDLE.invokeExact(device_handle);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_device_deinitialize", t);
        }
    }

    private static final class amdgpu_query_gpu_info$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_query_gpu_info", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    }

    public static int amdgpu_query_gpu_info(MemorySegment dev, MemorySegment info) {
        try {
            return (int) amdgpu_query_gpu_info$.HANDLE.invokeExact(dev, info);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_query_gpu_info", t);
        }
    }

    private static final class amdgpu_bo_import$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_bo_import", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS));
    }

    public static int amdgpu_bo_import(MemorySegment dev, int type, int shared_handle, MemorySegment output) {
        try {
            return (int) amdgpu_bo_import$.HANDLE.invokeExact(dev, type, shared_handle, output);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_bo_import", t);
        }
    }

    private static final class amdgpu_create_bo_from_user_mem$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_create_bo_from_user_mem", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
    }

    public static int amdgpu_create_bo_from_user_mem(MemorySegment dev, MemorySegment cpu, long size, MemorySegment buf_handle) {
        try {
            return (int) amdgpu_create_bo_from_user_mem$.HANDLE.invokeExact(dev, cpu, size, buf_handle);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_create_bo_from_user_mem", t);
        }
    }

    private static final class amdgpu_bo_alloc$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_bo_alloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    }

    public static int amdgpu_bo_alloc(MemorySegment dev, MemorySegment alloc_buffer, MemorySegment buf_handle) {
        try {
            return (int) amdgpu_bo_alloc$.HANDLE.invokeExact(dev, alloc_buffer, buf_handle);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_bo_alloc", t);
        }
    }

    private static final class amdgpu_bo_free$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_bo_free", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    public static int amdgpu_bo_free(MemorySegment buf_handle) {
        try {
            return (int) amdgpu_bo_free$.HANDLE.invokeExact(buf_handle);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_bo_free", t);
        }
    }

    private static final class amdgpu_va_range_alloc$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_va_range_alloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
    }

    public static int amdgpu_va_range_alloc(MemorySegment dev, int va_range_type, long size, long va_base_alignment, long va_base_required, MemorySegment va_base_allocated, MemorySegment va_range_handle, long flags) {
        try {
            return (int) amdgpu_va_range_alloc$.HANDLE.invokeExact(dev, va_range_type, size, va_base_alignment, va_base_required, va_base_allocated, va_range_handle, flags);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_va_range_alloc", t);
        }
    }

    private static final class amdgpu_va_range_free$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_va_range_free", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    public static int amdgpu_va_range_free(MemorySegment va_range_handle) {
        try {
            return (int) amdgpu_va_range_free$.HANDLE.invokeExact(va_range_handle);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_va_range_free", t);
        }
    }

    private static final class amdgpu_bo_va_op$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_bo_va_op", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT));
    }

    public static int amdgpu_bo_va_op(MemorySegment bo, long offset, long size, long addr, long flags, int ops) {
        try {
            return (int) amdgpu_bo_va_op$.HANDLE.invokeExact(bo, offset, size, addr, flags, ops);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_bo_va_op", t);
        }
    }

    private static final class amdgpu_bo_cpu_map$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_bo_cpu_map", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    }

    public static int amdgpu_bo_cpu_map(MemorySegment buf_handle, MemorySegment cpu) {
        try {
            return (int) amdgpu_bo_cpu_map$.HANDLE.invokeExact(buf_handle, cpu);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_bo_cpu_map", t);
        }
    }

    private static final class amdgpu_bo_cpu_unmap$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_bo_cpu_unmap", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    public static int amdgpu_bo_cpu_unmap(MemorySegment buf_handle) {
        try {
            return (int) amdgpu_bo_cpu_unmap$.HANDLE.invokeExact(buf_handle);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_bo_cpu_unmap", t);
        }
    }

    private static final class amdgpu_bo_list_create$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_bo_list_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    }

    public static int amdgpu_bo_list_create(MemorySegment dev, int number_of_resources, MemorySegment resources, MemorySegment resource_prios, MemorySegment result) {
        try {
            return (int) amdgpu_bo_list_create$.HANDLE.invokeExact(dev, number_of_resources, resources, resource_prios, result);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_bo_list_create", t);
        }
    }

    private static final class amdgpu_bo_list_destroy$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_bo_list_destroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    public static int amdgpu_bo_list_destroy(MemorySegment handle) {
        try {
            return (int) amdgpu_bo_list_destroy$.HANDLE.invokeExact(handle);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_bo_list_destroy", t);
        }
    }

    private static final class amdgpu_cs_ctx_create$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_cs_ctx_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    }

    public static int amdgpu_cs_ctx_create(MemorySegment dev, MemorySegment context) {
        try {
            return (int) amdgpu_cs_ctx_create$.HANDLE.invokeExact(dev, context);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_cs_ctx_create", t);
        }
    }

    private static final class amdgpu_cs_ctx_free$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_cs_ctx_free", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    public static int amdgpu_cs_ctx_free(MemorySegment context) {
        try {
            return (int) amdgpu_cs_ctx_free$.HANDLE.invokeExact(context);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_cs_ctx_free", t);
        }
    }

    private static final class amdgpu_cs_submit$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_cs_submit", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT));
    }

    public static int amdgpu_cs_submit(MemorySegment context, long flags, MemorySegment ibs_request, int number_of_requests) {
        try {
            return (int) amdgpu_cs_submit$.HANDLE.invokeExact(context, flags, ibs_request, number_of_requests);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_cs_submit", t);
        }
    }

    private static final class amdgpu_cs_query_fence_status$ {
        static final MethodHandle HANDLE = Lib.downcall("amdgpu_cs_query_fence_status", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
    }

    public static int amdgpu_cs_query_fence_status(MemorySegment fence, long timeout_ns, long flags, MemorySegment expired) {
        try {
            return (int) amdgpu_cs_query_fence_status$.HANDLE.invokeExact(fence, timeout_ns, flags, expired);
        } catch (Throwable t) {
            throw Lib.rethrow("amdgpu_cs_query_fence_status", t);
        }
    }
}

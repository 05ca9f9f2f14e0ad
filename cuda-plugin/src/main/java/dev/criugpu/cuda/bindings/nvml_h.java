package dev.criugpu.cuda.bindings;

import dev.criugpu.api.bindings.NativeLibrary;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Downcalls into {@code libnvidia-ml.so.1} (NVIDIA's nvml.h), in jextract's header-class shape: only what the GPU
 * memory queries use. The library is opened on first use of this class ({@link NativeLibrary}; {@link #loadError()} says when it cannot
 * be); each function is bound on its first call, through invokeExact: it is asked once at restore init, where a
 * first call through invokeWithArguments costs tens of milliseconds more.
 */
public final class nvml_h {
    public static final String LIBRARY = "libnvidia-ml.so.1";

    public static final int NVML_SUCCESS = 0;
    public static final int NVML_ERROR_UNINITIALIZED = 1;
    public static final int NVML_ERROR_NOT_SUPPORTED = 3;
    public static final int NVML_ERROR_NO_PERMISSION = 4;
    public static final int NVML_ERROR_INSUFFICIENT_SIZE = 7;
    public static final int NVML_ERROR_DRIVER_NOT_LOADED = 9;
    public static final int NVML_ERROR_GPU_IS_LOST = 15;

    /** Buffer size for nvmlDeviceGetUUID, terminating NUL included. */
    public static final int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
    /** What an unsigned long long field such as usedGpuMemory holds when the driver cannot say: (-1), all ones. */
    public static final long NVML_VALUE_NOT_AVAILABLE = -1L;

    /** The symbols the memory queries need (nvmlDeviceGetComputeRunningProcesses_v3 from r510 on). */
    public static final String[] MEMORY_SYMBOLS = {
            "nvmlInit_v2", "nvmlShutdown", "nvmlErrorString", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2",
            "nvmlDeviceGetUUID", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetComputeRunningProcesses_v3"};

    private nvml_h() {
    }

    private static final class Library {
        static final NativeLibrary NVML = NativeLibrary.open(LIBRARY,
                "no NVIDIA driver user-space library in the loader path", "driver too old");
    }

    /** Why libnvidia-ml cannot be used at all, or empty when it loaded. */
    public static Optional<String> loadError() {
        return Library.NVML.loadError();
    }

    /** The first of {@code symbols} that the library lacks, or empty when all are there. */
    public static Optional<String> missing(String... symbols) {
        return Library.NVML.missing(symbols);
    }

    private static MethodHandle bind(String name, FunctionDescriptor descriptor) {
        return Library.NVML.downcall(name, descriptor);
    }

    private static IllegalStateException failed(String name, Throwable t) {
        return new IllegalStateException(name + " downcall failed: " + t, t);
    }

    private static final class nvmlInit_v2 {
        static final MethodHandle HANDLE = bind("nvmlInit_v2", FunctionDescriptor.of(JAVA_INT));
    }

    /** {@code nvmlReturn_t nvmlInit_v2(void)} */
    public static int nvmlInit_v2() {
        try {
            return (int) nvmlInit_v2.HANDLE.invokeExact();
        } catch (Throwable t) {
            throw failed("nvmlInit_v2", t);
        }
    }

    private static final class nvmlShutdown {
        static final MethodHandle HANDLE = bind("nvmlShutdown", FunctionDescriptor.of(JAVA_INT));
    }

    /** {@code nvmlReturn_t nvmlShutdown(void)} */
    public static int nvmlShutdown() {
        try {
            return (int) nvmlShutdown.HANDLE.invokeExact();
        } catch (Throwable t) {
            throw failed("nvmlShutdown", t);
        }
    }

    private static final class nvmlErrorString {
        static final MethodHandle HANDLE = bind("nvmlErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }

    /** {@code const char *nvmlErrorString(nvmlReturn_t result)}: a static string of the library's. */
    public static MemorySegment nvmlErrorString(int result) {
        try {
            return (MemorySegment) nvmlErrorString.HANDLE.invokeExact(result);
        } catch (Throwable t) {
            throw failed("nvmlErrorString", t);
        }
    }

    private static final class nvmlDeviceGetCount_v2 {
        static final MethodHandle HANDLE = bind("nvmlDeviceGetCount_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    /** {@code nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)} */
    public static int nvmlDeviceGetCount_v2(MemorySegment deviceCount) {
        try {
            return (int) nvmlDeviceGetCount_v2.HANDLE.invokeExact(deviceCount);
        } catch (Throwable t) {
            throw failed("nvmlDeviceGetCount_v2", t);
        }
    }

    private static final class nvmlDeviceGetHandleByIndex_v2 {
        static final MethodHandle HANDLE = bind("nvmlDeviceGetHandleByIndex_v2", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    }

    /** {@code nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)} */
    public static int nvmlDeviceGetHandleByIndex_v2(int index, MemorySegment device) {
        try {
            return (int) nvmlDeviceGetHandleByIndex_v2.HANDLE.invokeExact(index, device);
        } catch (Throwable t) {
            throw failed("nvmlDeviceGetHandleByIndex_v2", t);
        }
    }

    private static final class nvmlDeviceGetUUID {
        static final MethodHandle HANDLE = bind("nvmlDeviceGetUUID", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    }

    /** {@code nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)} */
    public static int nvmlDeviceGetUUID(MemorySegment device, MemorySegment uuid, int length) {
        try {
            return (int) nvmlDeviceGetUUID.HANDLE.invokeExact(device, uuid, length);
        } catch (Throwable t) {
            throw failed("nvmlDeviceGetUUID", t);
        }
    }

    private static final class nvmlDeviceGetMemoryInfo {
        static final MethodHandle HANDLE = bind("nvmlDeviceGetMemoryInfo", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    }

    /** {@code nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)} */
    public static int nvmlDeviceGetMemoryInfo(MemorySegment device, MemorySegment memory) {
        try {
            return (int) nvmlDeviceGetMemoryInfo.HANDLE.invokeExact(device, memory);
        } catch (Throwable t) {
            throw failed("nvmlDeviceGetMemoryInfo", t);
        }
    }

    private static final class nvmlDeviceGetComputeRunningProcesses_v3 {
        static final MethodHandle HANDLE = bind("nvmlDeviceGetComputeRunningProcesses_v3",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    }

    /**
     * {@code nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
     * nvmlProcessInfo_t *infos)}
     */
    public static int nvmlDeviceGetComputeRunningProcesses_v3(MemorySegment device, MemorySegment infoCount, MemorySegment infos) {
        try {
            return (int) nvmlDeviceGetComputeRunningProcesses_v3.HANDLE.invokeExact(device, infoCount, infos);
        } catch (Throwable t) {
            throw failed("nvmlDeviceGetComputeRunningProcesses_v3", t);
        }
    }
}

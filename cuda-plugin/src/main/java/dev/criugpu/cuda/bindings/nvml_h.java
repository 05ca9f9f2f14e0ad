package dev.criugpu.cuda.bindings;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Downcalls into {@code libnvidia-ml.so.1} (NVIDIA's nvml.h), in jextract's header-class shape: only what the GPU
 * memory queries use. The library is opened on first use of this class; a host without it is told by
 * {@link #loadError()}.
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
        static final DriverLibrary NVML = new DriverLibrary(LIBRARY);
    }

    /** Why libnvidia-ml cannot be used at all, or empty when it loaded. */
    public static Optional<String> loadError() {
        return Library.NVML.loadError();
    }

    /** The first of {@code symbols} that the library lacks, or empty when all are there. */
    public static Optional<String> missing(String... symbols) {
        return Library.NVML.missing(symbols);
    }

    private static final FunctionDescriptor INT = FunctionDescriptor.of(JAVA_INT);
    private static final FunctionDescriptor PTR_INT = FunctionDescriptor.of(ADDRESS, JAVA_INT);
    private static final FunctionDescriptor INT_PTR = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor INT_INT_PTR = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS);
    private static final FunctionDescriptor INT_PTR_PTR = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS);
    private static final FunctionDescriptor INT_PTR_PTR_INT = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT);
    private static final FunctionDescriptor INT_PTR_PTR_PTR = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS);

    /** {@code nvmlReturn_t nvmlInit_v2(void)} */
    public static int nvmlInit_v2() {
        return Library.NVML.callInt("nvmlInit_v2", INT);
    }

    /** {@code nvmlReturn_t nvmlShutdown(void)} */
    public static int nvmlShutdown() {
        return Library.NVML.callInt("nvmlShutdown", INT);
    }

    /** {@code const char *nvmlErrorString(nvmlReturn_t result)}: a static string of the library's. */
    public static MemorySegment nvmlErrorString(int result) {
        return Library.NVML.callPointer("nvmlErrorString", PTR_INT, result);
    }

    /** {@code nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)} */
    public static int nvmlDeviceGetCount_v2(MemorySegment deviceCount) {
        return Library.NVML.callInt("nvmlDeviceGetCount_v2", INT_PTR, deviceCount);
    }

    /** {@code nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)} */
    public static int nvmlDeviceGetHandleByIndex_v2(int index, MemorySegment device) {
        return Library.NVML.callInt("nvmlDeviceGetHandleByIndex_v2", INT_INT_PTR, index, device);
    }

    /** {@code nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)} */
    public static int nvmlDeviceGetUUID(MemorySegment device, MemorySegment uuid, int length) {
        return Library.NVML.callInt("nvmlDeviceGetUUID", INT_PTR_PTR_INT, device, uuid, length);
    }

    /** {@code nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)} */
    public static int nvmlDeviceGetMemoryInfo(MemorySegment device, MemorySegment memory) {
        return Library.NVML.callInt("nvmlDeviceGetMemoryInfo", INT_PTR_PTR, device, memory);
    }

    /**
     * {@code nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
     * nvmlProcessInfo_t *infos)}
     */
    public static int nvmlDeviceGetComputeRunningProcesses_v3(MemorySegment device, MemorySegment infoCount, MemorySegment infos) {
        return Library.NVML.callInt("nvmlDeviceGetComputeRunningProcesses_v3", INT_PTR_PTR_PTR, device, infoCount, infos);
    }
}

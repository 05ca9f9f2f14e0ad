package dev.criugpu.cuda.bindings;

import dev.criugpu.api.bindings.NativeLibrary;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Downcalls into {@code libcuda.so.1} (cuda.h), in jextract's header-class shape. The library is opened on first
 * use ({@link NativeLibrary}) and every symbol is looked up lazily, so a driver older than r570 (no cuCheckpoint* symbols) is reported by
 * {@link #missing(String)} instead of failing at class load.
 */
public final class cuda_h {
    public static final String LIBRARY = "libcuda.so.1";

    public static final int CUDA_SUCCESS = 0;
    public static final int CUDA_ERROR_INVALID_VALUE = 1;
    public static final int CUDA_ERROR_OUT_OF_MEMORY = 2;
    public static final int CUDA_ERROR_NOT_INITIALIZED = 3;
    public static final int CUDA_ERROR_NO_DEVICE = 100;
    public static final int CUDA_ERROR_ILLEGAL_STATE = 401;
    public static final int CUDA_ERROR_NOT_FOUND = 500;
    public static final int CUDA_ERROR_NOT_READY = 600;
    public static final int CUDA_ERROR_NOT_PERMITTED = 800;
    public static final int CUDA_ERROR_NOT_SUPPORTED = 801;
    public static final int CUDA_ERROR_TIMEOUT = 909;

    private static final Map<String, MethodHandle> HANDLES = new ConcurrentHashMap<>();

    private cuda_h() {
    }

    /** Opened on first use of this class's functions. */
    private static final class Library {
        static final NativeLibrary CUDA = NativeLibrary.open(LIBRARY,
                "no NVIDIA driver user-space library in the loader path", "driver too old");
    }

    /** Why libcuda cannot be used at all, or empty when it loaded. */
    public static Optional<String> loadError() {
        return Library.CUDA.loadError();
    }

    /** True when the library is loaded and exports {@code symbol}. */
    public static boolean has(String symbol) {
        return Library.CUDA.has(symbol);
    }

    /** The first of {@code symbols} that libcuda lacks, or empty when all are there. */
    public static Optional<String> missing(String... symbols) {
        return Library.CUDA.missing(symbols);
    }

    private static MethodHandle handle(String name, FunctionDescriptor descriptor) {
        return HANDLES.computeIfAbsent(name, n -> Library.CUDA.downcall(n, descriptor));
    }

    private static int call(String name, FunctionDescriptor descriptor, Object... args) {
        try {
            return (int) handle(name, descriptor).invokeWithArguments(args);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(name + " failed: " + t, t);
        }
    }

    private static final FunctionDescriptor INT_PTR = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor INT_INT = FunctionDescriptor.of(JAVA_INT, JAVA_INT);
    private static final FunctionDescriptor INT_INT_PTR = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS);

    /** {@code CUresult cuDriverGetVersion(int *driverVersion)} */
    public static int cuDriverGetVersion(MemorySegment driverVersion) {
        return call("cuDriverGetVersion", INT_PTR, driverVersion);
    }

    /** {@code CUresult cuInit(unsigned int Flags)} */
    public static int cuInit(int flags) {
        return call("cuInit", INT_INT, flags);
    }

    /** {@code CUresult cuGetErrorString(CUresult error, const char **pStr)} */
    public static int cuGetErrorString(int error, MemorySegment pStr) {
        return call("cuGetErrorString", INT_INT_PTR, error, pStr);
    }

    /** {@code CUresult cuGetErrorName(CUresult error, const char **pStr)} */
    public static int cuGetErrorName(int error, MemorySegment pStr) {
        return call("cuGetErrorName", INT_INT_PTR, error, pStr);
    }

    /** {@code CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid)} */
    public static int cuCheckpointProcessGetRestoreThreadId(int pid, MemorySegment tid) {
        return call("cuCheckpointProcessGetRestoreThreadId", INT_INT_PTR, pid, tid);
    }

    /** {@code CUresult cuCheckpointProcessGetState(int pid, CUprocessState *state)} */
    public static int cuCheckpointProcessGetState(int pid, MemorySegment state) {
        return call("cuCheckpointProcessGetState", INT_INT_PTR, pid, state);
    }

    /** {@code CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)} */
    public static int cuCheckpointProcessLock(int pid, MemorySegment args) {
        return call("cuCheckpointProcessLock", INT_INT_PTR, pid, args);
    }

    /** {@code CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)} */
    public static int cuCheckpointProcessCheckpoint(int pid, MemorySegment args) {
        return call("cuCheckpointProcessCheckpoint", INT_INT_PTR, pid, args);
    }

    /** {@code CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)} */
    public static int cuCheckpointProcessRestore(int pid, MemorySegment args) {
        return call("cuCheckpointProcessRestore", INT_INT_PTR, pid, args);
    }

    /** {@code CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)} */
    public static int cuCheckpointProcessUnlock(int pid, MemorySegment args) {
        return call("cuCheckpointProcessUnlock", INT_INT_PTR, pid, args);
    }

    /** The checkpoint API symbols, all present from r570 on. */
    public static final String[] CHECKPOINT_SYMBOLS = {
            "cuCheckpointProcessGetRestoreThreadId", "cuCheckpointProcessGetState", "cuCheckpointProcessLock",
            "cuCheckpointProcessCheckpoint", "cuCheckpointProcessRestore", "cuCheckpointProcessUnlock"};
}

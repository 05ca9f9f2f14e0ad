package dev.criugpu.cuda.bindings;

import dev.criugpu.api.bindings.NativeLibrary;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Downcalls into {@code libcuda.so.1} (cuda.h), in jextract's header-class shape: each function's handle in a
 * holder class of its own, bound on the function's first call and called through invokeExact. The library is opened
 * on first use ({@link NativeLibrary}), so a driver older than r570 (no cuCheckpoint* symbols) is reported by
 * {@link #missing(String...)} instead of failing at class load.
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

    private static MethodHandle bind(String name, FunctionDescriptor descriptor) {
        return Library.CUDA.downcall(name, descriptor);
    }

    private static IllegalStateException failed(String name, Throwable t) {
        return new IllegalStateException(name + " downcall failed: " + t, t);
    }

    private static final FunctionDescriptor INT_PTR = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor INT_INT = FunctionDescriptor.of(JAVA_INT, JAVA_INT);
    private static final FunctionDescriptor INT_INT_PTR = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS);

    private static final class cuDriverGetVersion {
        static final MethodHandle HANDLE = bind("cuDriverGetVersion", INT_PTR);
    }

    /** {@code CUresult cuDriverGetVersion(int *driverVersion)} */
    public static int cuDriverGetVersion(MemorySegment driverVersion) {
        try {
            return (int) cuDriverGetVersion.HANDLE.invokeExact(driverVersion);
        } catch (Throwable t) {
            throw failed("cuDriverGetVersion", t);
        }
    }

    private static final class cuInit {
        static final MethodHandle HANDLE = bind("cuInit", INT_INT);
    }

    /** {@code CUresult cuInit(unsigned int Flags)} */
    public static int cuInit(int flags) {
        try {
            return (int) cuInit.HANDLE.invokeExact(flags);
        } catch (Throwable t) {
            throw failed("cuInit", t);
        }
    }

    private static final class cuGetErrorString {
        static final MethodHandle HANDLE = bind("cuGetErrorString", INT_INT_PTR);
    }

    /** {@code CUresult cuGetErrorString(CUresult error, const char **pStr)} */
    public static int cuGetErrorString(int error, MemorySegment pStr) {
        try {
            return (int) cuGetErrorString.HANDLE.invokeExact(error, pStr);
        } catch (Throwable t) {
            throw failed("cuGetErrorString", t);
        }
    }

    private static final class cuGetErrorName {
        static final MethodHandle HANDLE = bind("cuGetErrorName", INT_INT_PTR);
    }

    /** {@code CUresult cuGetErrorName(CUresult error, const char **pStr)} */
    public static int cuGetErrorName(int error, MemorySegment pStr) {
        try {
            return (int) cuGetErrorName.HANDLE.invokeExact(error, pStr);
        } catch (Throwable t) {
            throw failed("cuGetErrorName", t);
        }
    }

    private static final class cuCheckpointProcessGetRestoreThreadId {
        static final MethodHandle HANDLE = bind("cuCheckpointProcessGetRestoreThreadId", INT_INT_PTR);
    }

    /** {@code CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid)} */
    public static int cuCheckpointProcessGetRestoreThreadId(int pid, MemorySegment tid) {
        try {
            return (int) cuCheckpointProcessGetRestoreThreadId.HANDLE.invokeExact(pid, tid);
        } catch (Throwable t) {
            throw failed("cuCheckpointProcessGetRestoreThreadId", t);
        }
    }

    private static final class cuCheckpointProcessGetState {
        static final MethodHandle HANDLE = bind("cuCheckpointProcessGetState", INT_INT_PTR);
    }

    /** {@code CUresult cuCheckpointProcessGetState(int pid, CUprocessState *state)} */
    public static int cuCheckpointProcessGetState(int pid, MemorySegment state) {
        try {
            return (int) cuCheckpointProcessGetState.HANDLE.invokeExact(pid, state);
        } catch (Throwable t) {
            throw failed("cuCheckpointProcessGetState", t);
        }
    }

    private static final class cuCheckpointProcessLock {
        static final MethodHandle HANDLE = bind("cuCheckpointProcessLock", INT_INT_PTR);
    }

    /** {@code CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)} */
    public static int cuCheckpointProcessLock(int pid, MemorySegment args) {
        try {
            return (int) cuCheckpointProcessLock.HANDLE.invokeExact(pid, args);
        } catch (Throwable t) {
            throw failed("cuCheckpointProcessLock", t);
        }
    }

    private static final class cuCheckpointProcessCheckpoint {
        static final MethodHandle HANDLE = bind("cuCheckpointProcessCheckpoint", INT_INT_PTR);
    }

    /** {@code CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)} */
    public static int cuCheckpointProcessCheckpoint(int pid, MemorySegment args) {
        try {
            return (int) cuCheckpointProcessCheckpoint.HANDLE.invokeExact(pid, args);
        } catch (Throwable t) {
            throw failed("cuCheckpointProcessCheckpoint", t);
        }
    }

    private static final class cuCheckpointProcessRestore {
        static final MethodHandle HANDLE = bind("cuCheckpointProcessRestore", INT_INT_PTR);
    }

    /** {@code CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)} */
    public static int cuCheckpointProcessRestore(int pid, MemorySegment args) {
        try {
            return (int) cuCheckpointProcessRestore.HANDLE.invokeExact(pid, args);
        } catch (Throwable t) {
            throw failed("cuCheckpointProcessRestore", t);
        }
    }

    private static final class cuCheckpointProcessUnlock {
        static final MethodHandle HANDLE = bind("cuCheckpointProcessUnlock", INT_INT_PTR);
    }

    /** {@code CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)} */
    public static int cuCheckpointProcessUnlock(int pid, MemorySegment args) {
        try {
            return (int) cuCheckpointProcessUnlock.HANDLE.invokeExact(pid, args);
        } catch (Throwable t) {
            throw failed("cuCheckpointProcessUnlock", t);
        }
    }

    /** The checkpoint API symbols, all present from r570 on. */
    public static final String[] CHECKPOINT_SYMBOLS = {
            "cuCheckpointProcessGetRestoreThreadId", "cuCheckpointProcessGetState", "cuCheckpointProcessLock",
            "cuCheckpointProcessCheckpoint", "cuCheckpointProcessRestore", "cuCheckpointProcessUnlock"};
}

package dev.criugpu.cuda.sys;

import dev.criugpu.cuda.backend.CudaBackend;
import dev.criugpu.cuda.backend.CudaCallException;
import dev.criugpu.cuda.bindings.CUcheckpointCheckpointArgs;
import dev.criugpu.cuda.bindings.CUcheckpointGpuPair;
import dev.criugpu.cuda.bindings.CUcheckpointLockArgs;
import dev.criugpu.cuda.bindings.CUcheckpointRestoreArgs;
import dev.criugpu.cuda.bindings.CUcheckpointUnlockArgs;
import dev.criugpu.cuda.bindings.CUuuid;
import dev.criugpu.cuda.bindings.cuda_h;
import dev.criugpu.cuda.gpu.GpuPair;
import dev.criugpu.cuda.state.CudaState;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.OptionalInt;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/** The CUDA driver checkpoint API, called in this process through FFM (libcuda.so.1, r570+). */
public final class DriverBackend implements CudaBackend {
    /** r570 ships driver API 12080, the first with cuCheckpointProcess*. */
    public static final int MIN_API = 12080;

    private final int apiVersion;
    private volatile boolean initialised;

    private DriverBackend(int apiVersion) {
        this.apiVersion = apiVersion;
    }

    /** The outcome of looking at libcuda: a usable backend, or why not. */
    public record Probe(DriverBackend backend, int apiVersion, String reason) {
        public boolean usable() {
            return backend != null;
        }
    }

    /** Loads libcuda, checks the checkpoint symbols and the API version; initialises nothing in the driver. */
    public static Probe probe() {
        var loadError = cuda_h.loadError();
        if (loadError.isPresent()) return new Probe(null, 0, loadError.get());
        var missing = cuda_h.missing("cuDriverGetVersion", "cuGetErrorString", "cuInit");
        if (missing.isPresent()) return new Probe(null, 0, cuda_h.LIBRARY + " lacks " + missing.get());
        int version;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            int rc = cuda_h.cuDriverGetVersion(v);
            if (rc != cuda_h.CUDA_SUCCESS) return new Probe(null, 0, "cuDriverGetVersion failed: CUDA error " + rc);
            version = v.get(JAVA_INT, 0);
        }
        missing = cuda_h.missing(cuda_h.CHECKPOINT_SYMBOLS);
        if (missing.isPresent()) {
            return new Probe(null, version, "driver too old: driver API " + version + " has no " + missing.get()
                    + " (the checkpoint API needs r570, API " + MIN_API + "+)");
        }
        if (version < MIN_API) {
            return new Probe(null, version, "driver too old: driver API " + version + " < " + MIN_API + " (r570)");
        }
        return new Probe(new DriverBackend(version), version, "driver API " + version);
    }

    @Override
    public int apiVersion() {
        return apiVersion;
    }

    @Override
    public String name() {
        return "driver";
    }

    @Override
    public String describe() {
        return "CUDA driver API " + apiVersion + " (" + cuda_h.LIBRARY + ")";
    }

    @Override
    public boolean supportsGpuRemap() {
        return apiVersion >= CUcheckpointRestoreArgs.GPU_PAIRS_SINCE_API;
    }

    /** cuGetErrorString's words for {@code code}, or "CUDA error N" when the driver has none. */
    public static String errorString(int code) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(ADDRESS);
            if (cuda_h.cuGetErrorString(code, p) != cuda_h.CUDA_SUCCESS) return "CUDA error " + code;
            MemorySegment s = p.get(ADDRESS, 0);
            return s.equals(MemorySegment.NULL) ? "CUDA error " + code : s.reinterpret(512).getString(0);
        }
    }

    private static void check(int rc) throws CudaCallException {
        if (rc != cuda_h.CUDA_SUCCESS) throw new CudaCallException(rc, errorString(rc));
    }

    @Override
    public OptionalInt restoreThread(int pid) throws CudaCallException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment tid = arena.allocate(JAVA_INT);
            int rc = cuda_h.cuCheckpointProcessGetRestoreThreadId(pid, tid);
            if (rc == cuda_h.CUDA_ERROR_INVALID_VALUE || rc == cuda_h.CUDA_ERROR_NOT_INITIALIZED) {
                return OptionalInt.empty(); // the process has no CUDA state: normal, not an error
            }
            check(rc);
            int t = tid.get(JAVA_INT, 0);
            if (t <= 0) throw new CudaCallException(cuda_h.CUDA_ERROR_INVALID_VALUE, "driver reported restore thread " + t);
            return OptionalInt.of(t);
        }
    }

    @Override
    public CudaState state(int pid) throws CudaCallException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(JAVA_INT);
            check(cuda_h.cuCheckpointProcessGetState(pid, s));
            int v = s.get(JAVA_INT, 0);
            return CudaState.ofValue(v).orElseThrow(() ->
                    new CudaCallException(cuda_h.CUDA_ERROR_INVALID_VALUE, "unknown CUprocessState " + v));
        }
    }

    @Override
    public void lock(int pid, int timeoutMs) throws CudaCallException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment args = CUcheckpointLockArgs.allocate(arena);
            CUcheckpointLockArgs.timeoutMs(args, timeoutMs);
            check(cuda_h.cuCheckpointProcessLock(pid, args));
        }
    }

    @Override
    public void checkpoint(int pid) throws CudaCallException {
        try (Arena arena = Arena.ofConfined()) {
            check(cuda_h.cuCheckpointProcessCheckpoint(pid, CUcheckpointCheckpointArgs.allocate(arena)));
        }
    }

    @Override
    public void restore(int pid, List<GpuPair> pairs) throws CudaCallException {
        if (!pairs.isEmpty() && !supportsGpuRemap()) {
            throw new CudaCallException(cuda_h.CUDA_ERROR_NOT_SUPPORTED, "restoring onto other GPUs needs driver API "
                    + CUcheckpointRestoreArgs.GPU_PAIRS_SINCE_API + " (r580); this driver has " + apiVersion);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment args = CUcheckpointRestoreArgs.allocate(arena);
            if (!pairs.isEmpty()) {
                MemorySegment array = CUcheckpointGpuPair.allocateArray(pairs.size(), arena);
                for (int i = 0; i < pairs.size(); i++) {
                    MemorySegment pair = CUcheckpointGpuPair.asSlice(array, i);
                    CUuuid.bytes(CUcheckpointGpuPair.oldUuid(pair), pairs.get(i).oldUuid().bytes());
                    CUuuid.bytes(CUcheckpointGpuPair.newUuid(pair), pairs.get(i).newUuid().bytes());
                }
                CUcheckpointRestoreArgs.gpuPairs(args, array);
                CUcheckpointRestoreArgs.gpuPairsCount(args, pairs.size());
            }
            check(cuda_h.cuCheckpointProcessRestore(pid, args));
        }
    }

    @Override
    public void unlock(int pid) throws CudaCallException {
        try (Arena arena = Arena.ofConfined()) {
            check(cuda_h.cuCheckpointProcessUnlock(pid, CUcheckpointUnlockArgs.allocate(arena)));
        }
    }

    /** cuInit(0) once: restore needs it in the caller unless persistence mode is on. */
    @Override
    public void prepareRestore() throws CudaCallException {
        if (initialised) return;
        synchronized (this) {
            if (initialised) return;
            check(cuda_h.cuInit(0));
            initialised = true;
        }
    }
}

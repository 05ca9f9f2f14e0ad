package dev.criugpu.cuda.sys;

import dev.criugpu.api.PidGuard;
import dev.criugpu.cuda.bindings.nvmlMemory_t;
import dev.criugpu.cuda.bindings.nvmlProcessInfo_t;
import dev.criugpu.cuda.bindings.nvml_h;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * Device memory from NVML, called in this process (libnvidia-ml.so.1, the library nvidia-smi itself is built on):
 * no process is started, so the room check at restore init takes no pid (DESIGN rule 3) and skips nvidia-smi's
 * start-up (~0.1 s of restore init on the H100).
 *
 * <p>Each query is one nvmlInit_v2 … nvmlShutdown session (NVML counts its inits, so this never ends a session that
 * other code in the process opened). Threads: nvml.h (r580) mentions threads only to say that NVML is thread-safe and
 * for CPU affinity calls; nothing says that nvmlInit_v2 or the queries used here start one, and we know of none. That
 * is not taken on trust: every session counts this process's threads before nvmlInit_v2, inside the session and
 * after nvmlShutdown and prints the counts in its debug line. Measured on the H100 (driver 580.159.04): nvmlInit_v2
 * starts one thread (three in a dump's JVM) that nvmlShutdown leaves running. At restore that thread is made during
 * plugin init, while pids are parked, and the bootstrap's pid check (PidGuard), which runs after plugin init, covers
 * it (DESIGN rule 3): it is reported at debug level, not as a warning on every command. Like libcuda, NVML
 * may run nvidia-modprobe when the /dev/nvidia* nodes are missing; on a host that has run CUDA they exist.
 */
public final class NvmlMemory implements MemorySource {
    private static final Logger log = LoggerFactory.getLogger(NvmlMemory.class);
    public static final NvmlMemory INSTANCE = new NvmlMemory();
    /** First guess of processes per GPU; the driver tells the real number when it is more. */
    private static final int FIRST_CAPACITY = 32;
    /** Processes may start between the size query and the fill: a few more tries, each with the count NVML gave. */
    private static final int TRIES = 4;

    private NvmlMemory() {
    }

    /** Why NVML cannot be asked here (library not loadable, or too old), or empty when it can. */
    public static Optional<String> unusable() {
        Optional<String> load = nvml_h.loadError();
        if (load.isPresent()) return load;
        return nvml_h.missing(nvml_h.MEMORY_SYMBOLS).map(s -> nvml_h.LIBRARY + " has no " + s + " (driver too old)");
    }

    /**
     * Opens an NVML session that lasts as long as this process and makes one compute-process query: NVML's first start
     * and the linking of its calls cost tens of milliseconds, which a dump would otherwise pay between its first lock
     * and its first checkpoint (each later query opens and closes a session of its own, now cheap: NVML counts them).
     */
    public static void keepOpen() {
        if (unusable().isEmpty() && nvml_h.nvmlInit_v2() == nvml_h.NVML_SUCCESS) INSTANCE.computeProcesses();
    }

    @Override
    public Optional<List<ProcessMemory>> computeProcesses() {
        return session("compute processes", "nvmlDeviceGetComputeRunningProcesses_v3", (arena, device, uuid, rows) -> {
            int rc = 0;
            int capacity = FIRST_CAPACITY;
            MemorySegment count = arena.allocate(JAVA_INT);
            for (int t = 0; t < TRIES; t++) {
                MemorySegment infos = nvmlProcessInfo_t.allocateArray(capacity, arena);
                count.set(JAVA_INT, 0, capacity);
                rc = nvml_h.nvmlDeviceGetComputeRunningProcesses_v3(device, count, infos);
                if (rc == nvml_h.NVML_SUCCESS) {
                    int n = Math.min(count.get(JAVA_INT, 0), capacity);
                    for (int i = 0; i < n; i++) {
                        MemorySegment info = nvmlProcessInfo_t.asSlice(infos, i);
                        long used = nvmlProcessInfo_t.usedGpuMemory(info);
                        rows.add(new ProcessMemory(uuid, nvmlProcessInfo_t.pid(info),
                                used == nvml_h.NVML_VALUE_NOT_AVAILABLE ? -1 : used));
                    }
                    return nvml_h.NVML_SUCCESS;
                }
                if (rc != nvml_h.NVML_ERROR_INSUFFICIENT_SIZE) return rc;
                capacity = Math.max(count.get(JAVA_INT, 0), capacity) + FIRST_CAPACITY;
            }
            return rc;
        });
    }

    @Override
    public Optional<List<FreeMemory>> free() {
        return session("free memory", "nvmlDeviceGetMemoryInfo", (arena, device, uuid, rows) -> {
            MemorySegment memory = nvmlMemory_t.allocate(arena);
            int rc = nvml_h.nvmlDeviceGetMemoryInfo(device, memory);
            if (rc == nvml_h.NVML_SUCCESS) rows.add(new FreeMemory(uuid, nvmlMemory_t.free(memory)));
            return rc;
        });
    }

    /** What one GPU answers: adds its rows, returns NVML's status. */
    private interface DeviceQuery<T> {
        int ask(Arena arena, MemorySegment device, String uuid, List<T> rows);
    }

    private <T> Optional<List<T>> session(String what, String call, DeviceQuery<T> query) {
        long t0 = System.nanoTime();
        int threadsBefore = PidGuard.ownTids().size();
        int threadsInside;
        List<T> rows = new ArrayList<>();
        int gpus = 0;
        int rc = nvml_h.nvmlInit_v2();
        if (rc != nvml_h.NVML_SUCCESS) {
            log.warn("NVML cannot start (nvmlInit_v2: {}); GPU memory is not checked", error(rc));
            return Optional.empty();
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            rc = nvml_h.nvmlDeviceGetCount_v2(count);
            if (rc != nvml_h.NVML_SUCCESS) {
                log.warn("NVML cannot count the GPUs (nvmlDeviceGetCount_v2: {}); GPU memory is not checked", error(rc));
                return Optional.empty();
            }
            gpus = count.get(JAVA_INT, 0);
            MemorySegment device = arena.allocate(ADDRESS);
            MemorySegment uuidText = arena.allocate(nvml_h.NVML_DEVICE_UUID_V2_BUFFER_SIZE);
            for (int i = 0; i < gpus; i++) {
                rc = nvml_h.nvmlDeviceGetHandleByIndex_v2(i, device);
                if (rc != nvml_h.NVML_SUCCESS) {
                    // NO_PERMISSION: a GPU this process may not open (container, cgroup); it is not ours to restore onto
                    skipped(i, "nvmlDeviceGetHandleByIndex_v2", rc, what);
                    continue;
                }
                MemorySegment handle = device.get(ADDRESS, 0);
                rc = nvml_h.nvmlDeviceGetUUID(handle, uuidText, nvml_h.NVML_DEVICE_UUID_V2_BUFFER_SIZE);
                if (rc != nvml_h.NVML_SUCCESS) {
                    skipped(i, "nvmlDeviceGetUUID", rc, what);
                    continue;
                }
                String uuid = uuidText.getString(0);
                rc = query.ask(arena, handle, uuid, rows);
                if (rc != nvml_h.NVML_SUCCESS) skipped(i, call, rc, what);
            }
        } finally {
            threadsInside = PidGuard.ownTids().size();
            int down = nvml_h.nvmlShutdown();
            if (down != nvml_h.NVML_SUCCESS) log.warn("nvmlShutdown: {}", error(down));
        }
        int threadsAfter = PidGuard.ownTids().size();
        log.debug("GPU memory from NVML ({}): {} of {} GPU(s) in {} ms; threads of this process: {} before nvmlInit_v2, "
                        + "{} in the session, {} after nvmlShutdown", nvml_h.LIBRARY, what, gpus,
                (System.nanoTime() - t0) / 1_000_000, threadsBefore, threadsInside, threadsAfter);
        if (threadsAfter > threadsBefore) {
            log.debug("NVML left {} more thread(s) in this process than before nvmlInit_v2 (DESIGN rule 3 counts them)",
                    threadsAfter - threadsBefore);
        }
        return Optional.of(rows);
    }

    private static void skipped(int index, String call, int rc, String what) {
        log.info("NVML GPU {}: {} failed ({}); it is left out of the {} query", index, call, error(rc), what);
    }

    /** NVML's own words for a status, with the number. */
    static String error(int rc) {
        MemorySegment s = nvml_h.nvmlErrorString(rc);
        String text = s.equals(MemorySegment.NULL) ? "?" : s.reinterpret(256).getString(0);
        return text + " (" + rc + ")";
    }
}
